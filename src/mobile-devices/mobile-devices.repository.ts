import { Injectable } from '@nestjs/common';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { MobileDeviceDto } from './mobile-device.dto.js';
import { table } from '../platform/database/table.js';

export interface MobileDeviceRow extends MobileDeviceDto {
  readonly version: number;
}

/** A device to push to: its id and token (the worker's view; the token never leaves the server). */
export interface PushTarget {
  readonly id: number;
  readonly push_token: string;
}

// The token is stored but only its last 6 characters are ever selected for a response.
const RESOURCE_COLUMNS = `id, user_id, platform, right(push_token, 6) AS push_token_hint, app_version, device_model, is_active, deactivated_at,
  deactivated_by, deactivation_reason, token_refreshed_at, created_at, updated_at, created_by, updated_by`;
export const UNREGISTERED = 'unregistered';

export const MOBILE_DEVICE_LIST = listSpec({
  from: 'mobile_devices',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'created_at', 'updated_at'],
  filters: { user_id: 'int', platform: { enum: ['ios', 'android', 'web'] }, is_active: 'bool' },
});

const MOBILE_DEVICES = table('mobile_devices', { columns: RESOURCE_COLUMNS, list: MOBILE_DEVICE_LIST });

/** The columns a mobile-devices write may set. */
type MobileDeviceColumn =
  | 'user_id'
  | 'platform'
  | 'push_token'
  | 'app_version'
  | 'device_model'
  | 'is_active'
  | 'deactivated_at'
  | 'deactivated_by'
  | 'deactivation_reason'
  | 'token_refreshed_at'
  | 'created_by'
  | 'updated_by';

/** Row access for mobile devices (the push token is written, never read back but for the worker). */
@Injectable()
export class MobileDevicesRepository extends ResourceTable<MobileDeviceRow, MobileDeviceColumn> {
  constructor(uow: UnitOfWork, projections: Projections) {
    super({ table: MOBILE_DEVICES, type: 'mobile_device', notFound: 'MOBILE_DEVICE_NOT_FOUND' }, uow, projections);
  }

  /** The recipient's active devices, for the push worker. */
  activeTargets(db: Tx['db'], userId: number): Promise<PushTarget[]> {
    return db.query<PushTarget[]>(
      'SELECT id, push_token FROM mobile_devices WHERE user_id = $1 AND is_active ORDER BY id',
      [userId],
    );
  }

  /** Whether the device is active, under a row lock; undefined when it does not exist. */
  async lockIsActive(tx: Tx, id: number): Promise<boolean | undefined> {
    const [current] = await tx.db.query<{ is_active: boolean }[]>(
      'SELECT is_active FROM mobile_devices WHERE id = $1 FOR UPDATE',
      [id],
    );
    return current?.is_active;
  }
}
