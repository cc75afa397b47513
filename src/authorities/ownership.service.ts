import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { UserReferences } from '../users/user-references.repository.js';
import { AuditService } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { AuthorizationService } from '../access-model/authorization.service.js';
import { USER_STATUS } from '../platform/auth/roles.js';
import { ApiError } from '../platform/http/api-error.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { currentRequest } from '../platform/http/request-context.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { NOW, withoutVersion } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { Prefetched } from '../platform/projections/prefetched.js';
import { AuthoritiesRepository, type AuthorityRow } from './authorities.repository.js';
import { DevicesRepository, type DeviceRow } from './devices.repository.js';
import type { OwnershipTransferDto, TransferOwnerDto, TransferResultDto } from './dto/device.dto.js';

function targetInvalid(userId: number, reason: string, message: string): ApiError {
  return new ApiError('TRANSFER_TARGET_INVALID', message, { new_owner_user_id: userId, reason });
}

/**
 * `transfer-owner`, the only path that sets `owner` (part 6.2). The device row lock serialises
 * concurrent transfers of one device; the partial unique index on owner authorities makes a
 * second owner impossible whatever happens.
 */
@Injectable()
export class OwnershipService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly userReferences: UserReferences,
    private readonly devices: DevicesRepository,
    private readonly authorities: AuthoritiesRepository,
    private readonly audit: AuditService,
    private readonly authorization: AuthorizationService,
    private readonly access: AccessWatch,
  ) {}

  async history(
    deviceId: number,
    query: Record<string, unknown>,
    prefetched?: Prefetched,
  ): Promise<ListResponse<OwnershipTransferDto>> {
    // The guard finds the device only for callers allowed on it alone; a missing device is a 404
    // for everyone (part 5), never an empty history.
    if ((await this.devices.read(deviceId, prefetched)) === undefined)
      throw ApiError.notFound('DEVICE_NOT_FOUND', deviceId);
    return this.devices.transfers(deviceId, query);
  }

  transfer(
    actor: AuthContext,
    deviceId: number,
    dto: TransferOwnerDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<TransferResultDto>> {
    // A device-scoped right never lets its holder make itself owner: only the role or a grant.
    if (
      dto.new_owner_user_id === actor.user_id &&
      !this.authorization.decideGlobally(actor, 'devices.transfer_owner').allowed
    ) {
      throw new ApiError(
        'SELF_ACTION_FORBIDDEN',
        'You cannot transfer a device to yourself through a right on that device',
        { action: 'transfer_owner', user_id: actor.user_id, device_id: deviceId },
      );
    }
    return this.uow.run(async (tx) => {
      const device = await this.devices.lock(tx, deviceId);
      assertIfMatch(ifMatch, device.version);
      await this.assertTarget(tx, device, dto.new_owner_user_id);
      const actor = tx.actor;
      const previous = await this.authorities.lockOwnerOf(tx, deviceId);
      // An owner's authority is always a user's (a group's is never the owner).
      const holders = [dto.new_owner_user_id, ...(previous?.user_id == null ? [] : [previous.user_id])];
      await this.access.watch(tx, { users: holders, devices: [deviceId] });
      // Demote first: the unique index allows one owner per device at every statement.
      const demoted = previous === undefined ? undefined : await this.demote(tx, previous, dto, actor);
      const promoted = await this.authorities.makeOwner(tx, deviceId, dto.new_owner_user_id, actor);
      const updatedDevice = await this.devices.patch(tx, deviceId, {
        owner_user_id: dto.new_owner_user_id,
        updated_by: actor,
      });
      await this.devices.recordTransfer(tx, {
        device_id: deviceId,
        from_user_id: device.owner_user_id,
        to_user_id: dto.new_owner_user_id,
        reason: dto.reason ?? null,
        transferred_by: actor,
        request_id: currentRequest()?.request_id ?? null,
      });
      await this.audit.record(tx, 'device.transfer_owner', deviceId, {
        reason: dto.reason ?? null,
        changes: {
          owner_user_id: [device.owner_user_id, dto.new_owner_user_id],
          ...(demoted === undefined || demoted.revoked_at === null ? {} : { previous_owner_revoked: [false, true] }),
        },
      });
      const result: TransferResultDto = {
        device_id: deviceId,
        previous_owner: demoted === undefined ? null : withoutVersion(demoted),
        new_owner: withoutVersion(promoted),
      };
      return new ResourceResponse(result, { version: updatedDevice.version });
    });
  }

  private async assertTarget(tx: Tx, device: DeviceRow, userId: number): Promise<void> {
    const user = await this.userReferences.user(tx.db, userId);
    if (user === undefined) throw ApiError.notFound('USER_NOT_FOUND', userId);
    if (user.is_deleted) throw targetInvalid(userId, 'user_deleted', `User ${userId} is deleted`);
    if (user.status_id !== USER_STATUS.active)
      throw targetInvalid(userId, 'user_not_active', `User ${userId} is not active`);
    if (device.owner_user_id === userId)
      throw targetInvalid(userId, 'already_owner', `User ${userId} already owns device ${device.id}`);
  }

  private async demote(
    tx: Tx,
    previous: AuthorityRow,
    dto: TransferOwnerDto,
    actor: number | null,
  ): Promise<AuthorityRow> {
    const revoke = dto.keep_previous_owner_access === false;
    return this.authorities.patch(tx, previous.id, {
      owner: false,
      ...(revoke
        ? { is_active: false, revoked_at: NOW, revoked_by: actor, revoke_reason: dto.reason ?? 'ownership transferred' }
        : {}),
      updated_by: actor,
    });
  }
}
