import { Injectable } from '@nestjs/common';
import { CacheService } from '../cache/cache.service.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { ResourceTable } from '../database/resource-table.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import type { DeviceDto } from './dto/device.dto.js';

export interface DeviceRow extends DeviceDto {
  readonly version: number;
}

const RESOURCE_COLUMNS =
  'id, serial_number, name, model, owner_user_id, created_at, updated_at, created_by, updated_by';
export const DEVICE_COLUMNS = `version, ${RESOURCE_COLUMNS}`;

export const DEVICE_LIST: ListSpec = {
  from: 'devices',
  select: RESOURCE_COLUMNS,
  idColumn: 'id',
  sort: { id: 'id', serial_number: 'serial_number', name: 'name', created_at: 'created_at' },
  defaultSort: 'id:asc',
  filters: { owner_user_id: { column: 'owner_user_id', type: 'int' } },
  search: ['serial_number', 'name'],
};

@Injectable()
export class DevicesRepository extends ResourceTable<DeviceRow> {
  constructor(uow: UnitOfWork, cache: CacheService) {
    super({ table: 'devices', columns: DEVICE_COLUMNS, type: 'device', notFound: 'DEVICE_NOT_FOUND' }, uow, cache);
  }

  rebuildAfterCommit(tx: Tx, row: DeviceRow): void {
    tx.afterCommit(() => this.refresh(row));
  }
}
