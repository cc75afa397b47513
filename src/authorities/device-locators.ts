import type { DeviceLocator } from '../auth/authorize.decorator.js';
import { ApiError } from '../common/api-error.js';
import { pathId } from '../common/id.pipe.js';
import { AuthoritiesRepository } from './authorities.repository.js';
import { DevicesRepository } from './devices.repository.js';

/** The device named by a path parameter; 404 `DEVICE_NOT_FOUND` before any device check. */
export function deviceFromParam(name: string): DeviceLocator {
  return async (request, modules) => {
    const id = pathId(request, name);
    if ((await modules.get(DevicesRepository, { strict: false }).read(id)) === undefined)
      throw ApiError.notFound('DEVICE_NOT_FOUND', id);
    return id;
  };
}

/** The device of the authority named by a path parameter; 404 `AUTHORITY_NOT_FOUND` first. */
export function deviceOfAuthority(name: string): DeviceLocator {
  return async (request, modules) => {
    const id = pathId(request, name);
    const read = await modules.get(AuthoritiesRepository, { strict: false }).read(id);
    if (read === undefined) throw ApiError.notFound('AUTHORITY_NOT_FOUND', id);
    return read.value.device_id;
  };
}
