import { Injectable } from '@nestjs/common';
import { creationStamp, updateStamp } from '../audit/actor-stamps.js';
import { AuditService, diffChanges } from '../audit/audit.service.js';
import { CacheService } from '../cache/cache.service.js';
import { ApiError } from '../common/api-error.js';
import { isUniqueViolation } from '../common/error-mapping.js';
import { assertIfMatch, type IfMatch } from '../common/etag.js';
import { parseListQuery } from '../common/list/list-query.parser.js';
import { runList } from '../common/list/list-runner.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { ResourceResponse, type ListResponse } from '../common/responses.js';
import { ResourceTable, respondWith } from '../database/resource-table.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import type { MobileDeviceDto, RegisterMobileDeviceDto } from './mobile-device.dto.js';

interface MobileDeviceRow extends MobileDeviceDto {
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
const COLUMNS = `version, ${RESOURCE_COLUMNS}`;
export const UNREGISTERED = 'unregistered';

const MOBILE_DEVICE_LIST: ListSpec = {
  from: 'mobile_devices',
  select: RESOURCE_COLUMNS,
  idColumn: 'id',
  sort: { id: 'id', created_at: 'created_at', updated_at: 'updated_at' },
  defaultSort: 'id:asc',
  filters: {
    user_id: { column: 'user_id', type: 'int' },
    platform: { column: 'platform', type: { enum: ['ios', 'android', 'web'] } },
    is_active: { column: 'is_active', type: 'bool' },
  },
  search: [],
};

function tokenTaken(): ApiError {
  return new ApiError('MOBILE_DEVICE_TOKEN_TAKEN', 'This push token is already registered', {});
}

/** Mobile devices (part 6.9), and the deactivation the push worker applies to rejected tokens. */
@Injectable()
export class MobileDevicesService {
  private readonly devices: ResourceTable<MobileDeviceRow>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    cache: CacheService,
  ) {
    this.devices = new ResourceTable<MobileDeviceRow>(
      { table: 'mobile_devices', columns: COLUMNS, type: 'mobile_device', notFound: 'MOBILE_DEVICE_NOT_FOUND' },
      uow,
      cache,
    );
  }

  list(query: Record<string, unknown>): Promise<ListResponse<MobileDeviceDto>> {
    return runList<MobileDeviceDto>(this.uow.reader, MOBILE_DEVICE_LIST, parseListQuery(MOBILE_DEVICE_LIST, query));
  }

  get(id: number): Promise<ResourceResponse<MobileDeviceDto>> {
    return this.devices.detail(id);
  }

  async register(dto: RegisterMobileDeviceDto): Promise<ResourceResponse<MobileDeviceDto>> {
    const stamp = creationStamp();
    const row = await this.uow
      .run(async (tx) => {
        const [user] = await tx.db.query<{ id: number }[]>('SELECT id FROM users WHERE id = $1 AND NOT is_deleted', [
          dto.user_id,
        ]);
        if (user === undefined) throw ApiError.notFound('USER_NOT_FOUND', dto.user_id);
        const [created] = await tx.db.query<MobileDeviceRow[]>(
          `INSERT INTO mobile_devices (user_id, platform, push_token, app_version, device_model, created_by, updated_by) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
          [
            dto.user_id,
            dto.platform,
            dto.push_token,
            dto.app_version ?? null,
            dto.device_model ?? null,
            stamp.created_by,
            stamp.updated_by,
          ],
        );
        if (created === undefined) throw new Error('mobile device insert returned no row');
        await this.audit.record(tx.db, {
          action: 'mobile_device.create',
          resource_type: 'mobile_device',
          resource_id: created.id,
          changes: diffChanges(null, created, [
            'user_id',
            'platform',
            'push_token_hint',
            'app_version',
            'device_model',
          ]),
        });
        this.rebuild(tx, created);
        return created;
      })
      .catch((error: unknown) => {
        throw isUniqueViolation(error, 'mobile_devices_push_token_key') ? tokenTaken() : error;
      });
    return respondWith(row, { status: 201, location: `/v1/admin/mobile-devices/${row.id}` });
  }

  /** active → inactive; an inactive device is a 409. */
  deactivate(id: number, reason: string | undefined, ifMatch: IfMatch): Promise<ResourceResponse<MobileDeviceDto>> {
    return this.uow.run(async (tx) => {
      const before = await this.devices.lock(tx, id);
      assertIfMatch(ifMatch, before.version);
      if (!before.is_active)
        throw new ApiError('INVALID_STATE_TRANSITION', 'The mobile device is already inactive', {
          from: 'inactive',
          action: 'deactivate',
        });
      const after = await this.setInactive(tx, id, reason ?? 'deactivated', updateStamp().updated_by);
      return respondWith(after);
    });
  }

  /** Sets a new token; a device deactivated because its token was rejected becomes active again. */
  async refreshToken(id: number, token: string, ifMatch: IfMatch): Promise<ResourceResponse<MobileDeviceDto>> {
    const row = await this.uow
      .run(async (tx) => {
        const before = await this.devices.lock(tx, id);
        assertIfMatch(ifMatch, before.version);
        const reactivate = !before.is_active && before.deactivation_reason === UNREGISTERED;
        const after = await this.devices.update(
          tx,
          id,
          `push_token = $2, token_refreshed_at = now(), updated_by = $3${reactivate ? ', is_active = true, deactivated_at = NULL, deactivated_by = NULL, deactivation_reason = NULL' : ''}`,
          [token, updateStamp().updated_by],
        );
        await this.audit.record(tx.db, {
          action: 'mobile_device.refresh_token',
          resource_type: 'mobile_device',
          resource_id: id,
          changes: diffChanges(before, after, ['push_token_hint', 'is_active', 'token_refreshed_at']),
        });
        this.rebuild(tx, after);
        return after;
      })
      .catch((error: unknown) => {
        throw isUniqueViolation(error, 'mobile_devices_push_token_key') ? tokenTaken() : error;
      });
    return respondWith(row);
  }

  /** The recipient's active devices, for the push worker. */
  activeTargets(userId: number): Promise<PushTarget[]> {
    return this.uow.reader.query<PushTarget[]>(
      'SELECT id, push_token FROM mobile_devices WHERE user_id = $1 AND is_active ORDER BY id',
      [userId],
    );
  }

  /** The provider rejected the token: deactivate with reason `unregistered` (a system flow, no actor). */
  async deactivateUnregistered(id: number): Promise<boolean> {
    return this.uow.run(async (tx) => {
      const [current] = await tx.db.query<{ is_active: boolean }[]>(
        'SELECT is_active FROM mobile_devices WHERE id = $1 FOR UPDATE',
        [id],
      );
      if (current?.is_active !== true) return false;
      await this.setInactive(tx, id, UNREGISTERED, null);
      return true;
    });
  }

  private async setInactive(tx: Tx, id: number, reason: string, actor: number | null): Promise<MobileDeviceRow> {
    const after = await this.devices.update(
      tx,
      id,
      'is_active = false, deactivated_at = now(), deactivated_by = $2, deactivation_reason = $3, updated_by = $2',
      [actor, reason],
    );
    await this.audit.record(tx.db, {
      action: 'mobile_device.deactivate',
      resource_type: 'mobile_device',
      resource_id: id,
      reason,
      changes: { is_active: [true, false] },
    });
    this.rebuild(tx, after);
    return after;
  }

  private rebuild(tx: Tx, row: MobileDeviceRow): void {
    tx.afterCommit(() => this.devices.refresh(row));
  }
}
