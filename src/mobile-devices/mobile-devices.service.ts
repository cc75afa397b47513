import { Injectable } from '@nestjs/common';
import { UserReferences } from '../users/user-references.repository.js';
import { creationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../platform/audit/audit.service.js';
import { ApiError } from '../platform/http/api-error.js';
import { isUniqueViolation } from '../platform/http/error-mapping.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { NOW, respondWith } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { MobileDeviceDto, RegisterMobileDeviceDto } from './mobile-device.dto.js';
import {
  MobileDevicesRepository,
  UNREGISTERED,
  type MobileDeviceRow,
  type PushTarget,
} from './mobile-devices.repository.js';
import { EventsRepository } from '../events/events.repository.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

function tokenTaken(): ApiError {
  return new ApiError('MOBILE_DEVICE_TOKEN_TAKEN', 'This push token is already registered', {});
}

/** Mobile devices (part 6.9), and the deactivation the push worker applies to rejected tokens. */
@Injectable()
export class MobileDevicesService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly userReferences: UserReferences,
    private readonly audit: AuditService,
    private readonly devices: MobileDevicesRepository,
    private readonly events: EventsRepository,
  ) {}

  list(query: Record<string, unknown>): Promise<ListResponse<MobileDeviceDto>> {
    return this.devices.list(query);
  }

  get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<MobileDeviceDto>> {
    return this.devices.detail(id, false, prefetched);
  }

  async register(dto: RegisterMobileDeviceDto): Promise<ResourceResponse<MobileDeviceDto>> {
    const row = await this.uow
      .run(async (tx) => {
        const stamp = creationStamp(tx);
        await this.userReferences.liveUser(tx.db, dto.user_id);
        const created = await this.devices.insert(tx, {
          user_id: dto.user_id,
          platform: dto.platform,
          push_token: dto.push_token,
          app_version: dto.app_version ?? null,
          device_model: dto.device_model ?? null,
          ...stamp,
        });
        if (created === undefined) throw new Error('mobile device insert returned no row');
        await this.audit.record(tx, 'mobile_device.create', created.id, {
          changes: diffChanges(null, created, [
            'user_id',
            'platform',
            'push_token_hint',
            'app_version',
            'device_model',
          ]),
        });
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
      const after = await this.setInactive(tx, id, reason ?? 'deactivated', updateStamp(tx).updated_by);
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
        const after = await this.devices.patch(tx, id, {
          push_token: token,
          token_refreshed_at: NOW,
          ...updateStamp(tx),
          ...(reactivate
            ? { is_active: true, deactivated_at: null, deactivated_by: null, deactivation_reason: null }
            : {}),
        });
        await this.audit.record(tx, 'mobile_device.refresh_token', id, {
          before,
          changes: diffChanges(before, after, ['push_token_hint', 'is_active', 'token_refreshed_at']),
        });
        return after;
      })
      .catch((error: unknown) => {
        throw isUniqueViolation(error, 'mobile_devices_push_token_key') ? tokenTaken() : error;
      });
    return respondWith(row);
  }

  /** The recipient's active devices, for the push worker. */
  activeTargets(userId: number): Promise<PushTarget[]> {
    return this.devices.activeTargets(this.uow.reader, userId);
  }

  /** The provider rejected the token: deactivate with reason `unregistered` (a system flow, no actor). */
  async deactivateUnregistered(id: number): Promise<boolean> {
    return this.uow.run(async (tx) => {
      if ((await this.devices.lockIsActive(tx, id)) !== true) return false;
      const after = await this.setInactive(tx, id, UNREGISTERED, null);
      await this.events.append(tx, null, null, [
        {
          type: 'mobile_device.deactivated',
          resource_type: 'mobile_device',
          resource_id: String(id),
          data: { mobile_device_id: id, user_id: after.user_id, reason: UNREGISTERED },
        },
      ]);
      return true;
    });
  }

  private async setInactive(tx: Tx, id: number, reason: string, actor: number | null): Promise<MobileDeviceRow> {
    const after = await this.devices.patch(tx, id, {
      is_active: false,
      deactivated_at: NOW,
      deactivated_by: actor,
      deactivation_reason: reason,
      updated_by: actor,
    });
    await this.audit.record(tx, 'mobile_device.deactivate', id, {
      // Only an active device is deactivated: its deactivation stamps were empty.
      before: { deactivated_at: null, deactivated_by: null, deactivation_reason: null },
      reason,
      changes: { is_active: [true, false] },
    });
    return after;
  }
}
