import { Injectable } from '@nestjs/common';
import type { ListResponse } from '../platform/http/responses.js';
import type { OwnershipTransferDto } from './dto/device.dto.js';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { DeviceDto } from './dto/device.dto.js';
import { table } from '../platform/database/table.js';

const OWNERSHIP_TRANSFERS = table('ownership_transfers');

export interface DeviceRow extends DeviceDto {
  readonly version: number;
}

const RESOURCE_COLUMNS =
  'id, serial_number, name, model, owner_user_id, created_at, updated_at, created_by, updated_by';

export const DEVICE_LIST = listSpec({
  from: 'devices',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'serial_number', 'name', 'created_at'],
  filters: { owner_user_id: 'int' },
  search: ['serial_number', 'name'],
});

const DEVICES = table('devices', { columns: RESOURCE_COLUMNS, list: DEVICE_LIST });

type DeviceColumn = 'serial_number' | 'name' | 'model' | 'owner_user_id' | 'created_by' | 'updated_by';

/** `GET /devices/{id}/ownership-transfers`: oldest first. */
export const TRANSFER_LIST = listSpec({
  from: 'ownership_transfers',
  select: 'id, device_id, from_user_id, to_user_id, reason, transferred_by, transferred_at, request_id',
  sort: ['id', 'transferred_at'],
  defaultSort: 'transferred_at:asc',
});

/** One row of the append-only ownership history. */
export interface OwnershipTransferRecord {
  readonly device_id: number;
  readonly from_user_id: number | null;
  readonly to_user_id: number;
  readonly reason: string | null;
  readonly transferred_by: number | null;
  readonly request_id: string | null;
}

@Injectable()
export class DevicesRepository extends ResourceTable<DeviceRow, DeviceColumn> {
  constructor(uow: UnitOfWork, projections: Projections) {
    super({ table: DEVICES, type: 'device', notFound: 'DEVICE_NOT_FOUND' }, uow, projections);
  }

  /** A page of the device's ownership history. */
  transfers(deviceId: number, query: Record<string, unknown>): Promise<ListResponse<OwnershipTransferDto>> {
    return this.pages.read<OwnershipTransferDto>(TRANSFER_LIST, query, { where: 'device_id = $1', params: [deviceId] });
  }

  /** Appends a row to the ownership history (the table refuses UPDATE and DELETE). */
  async recordTransfer(tx: Tx, transfer: OwnershipTransferRecord): Promise<void> {
    await tx.write(
      OWNERSHIP_TRANSFERS,
      'INSERT INTO ownership_transfers (device_id, from_user_id, to_user_id, reason, transferred_by, request_id) VALUES ($1, $2, $3, $4, $5, $6)',
      [
        transfer.device_id,
        transfer.from_user_id,
        transfer.to_user_id,
        transfer.reason,
        transfer.transferred_by,
        transfer.request_id,
      ],
    );
  }
}
