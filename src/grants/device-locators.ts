import type { DeviceLocator } from '../auth/authorize.decorator.js';
import { ApiError } from '../common/api-error.js';
import { pathId } from '../common/id.pipe.js';
import { AuthorityPermissionsRepository } from './authority-permissions.repository.js';

/** The device of the authority permission named by a path parameter; 404 first. */
export function deviceOfAuthorityPermission(name: string): DeviceLocator {
  return async (request, modules) => {
    const id = pathId(request, name);
    const read = await modules.get(AuthorityPermissionsRepository, { strict: false }).read(id);
    if (read === undefined) throw ApiError.notFound('AUTHORITY_PERMISSION_NOT_FOUND', id);
    return read.value.device_id;
  };
}
