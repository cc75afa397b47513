import { Injectable } from '@nestjs/common';
import { creationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { AuthorizationService } from '../access-model/authorization.service.js';
import { deviceRowScope } from '../access-model/row-scope.js';
import { ApiError } from '../platform/http/api-error.js';
import { isUniqueViolation } from '../platform/http/error-mapping.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { respondWith } from '../platform/projections/resource-table.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { DevicesRepository, type DeviceRow } from './devices.repository.js';
import type { CreateDeviceDto, DeviceDto, UpdateDeviceDto } from './dto/device.dto.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

const AUDITED_FIELDS = ['serial_number', 'name', 'model'] as const satisfies readonly (keyof DeviceRow)[];

function serialTaken(serial: string): ApiError {
  return new ApiError('DEVICE_SERIAL_TAKEN', `A device with serial number ${serial} already exists`, {
    serial_number: serial,
  });
}

/** The device registry (part 6.2); ownership lives in `OwnershipService`. */
@Injectable()
export class DevicesService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly devices: DevicesRepository,
    private readonly audit: AuditService,
    private readonly authorization: AuthorizationService,
  ) {}

  async list(actor: AuthContext, query: Record<string, unknown>): Promise<ListResponse<DeviceDto>> {
    return this.devices.list(query, await deviceRowScope(this.authorization, actor, 'devices.read', 'id'));
  }

  get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<DeviceDto>> {
    return this.devices.detail(id, false, prefetched);
  }

  async create(dto: CreateDeviceDto): Promise<ResourceResponse<DeviceDto>> {
    const row = await this.uow
      .run(async (tx) => {
        const stamp = creationStamp(tx);
        const created = await this.devices.insert(tx, {
          serial_number: dto.serial_number,
          name: dto.name,
          model: dto.model ?? null,
          ...stamp,
        });
        if (created === undefined) throw new Error('device insert returned no row');
        await this.audit.record(tx, 'device.create', created.id, {
          changes: diffChanges(null, created, AUDITED_FIELDS),
        });
        return created;
      })
      .catch((error: unknown) => {
        throw isUniqueViolation(error, 'devices_serial_number_key') ? serialTaken(dto.serial_number) : error;
      });
    return respondWith(row, { status: 201, location: `/v1/admin/devices/${row.id}` });
  }

  async update(id: number, dto: UpdateDeviceDto, ifMatch: IfMatch): Promise<ResourceResponse<DeviceDto>> {
    const row = await this.uow.run(async (tx) => {
      const before = await this.devices.lock(tx, id);
      assertIfMatch(ifMatch, before.version);
      const wanted = {
        ...before,
        ...(dto.name === undefined ? {} : { name: dto.name }),
        ...(dto.model === undefined ? {} : { model: dto.model }),
      };
      const changes = diffChanges(before, wanted, AUDITED_FIELDS);
      if (Object.keys(changes).length === 0) return before;
      const after = await this.devices.patch(tx, id, { name: wanted.name, model: wanted.model, ...updateStamp(tx) });
      await this.audit.record(tx, 'device.update', id, { before, changes });
      return after;
    });
    return respondWith(row);
  }
}
