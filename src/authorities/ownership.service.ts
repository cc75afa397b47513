import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import type { AuthContext } from '../auth/auth-context.js';
import { AuthorizationService } from '../auth/authorization.service.js';
import { USER_STATUS } from '../auth/roles.js';
import { ApiError } from '../common/api-error.js';
import { assertIfMatch, type IfMatch } from '../common/etag.js';
import { parseListQuery } from '../common/list/list-query.parser.js';
import { runList } from '../common/list/list-runner.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { currentActorId, currentRequest } from '../common/request-context.js';
import { ResourceResponse, type ListResponse } from '../common/responses.js';
import { withoutVersion } from '../database/resource-table.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import { AUTHORITY_COLUMNS, AuthoritiesRepository, type AuthorityRow } from './authorities.repository.js';
import { DevicesRepository, type DeviceRow } from './devices.repository.js';
import type { OwnershipTransferDto, TransferOwnerDto, TransferResultDto } from './dto/device.dto.js';

const TRANSFER_LIST: ListSpec = {
  from: 'ownership_transfers',
  select: 'id, device_id, from_user_id, to_user_id, reason, transferred_by, transferred_at, request_id',
  idColumn: 'id',
  sort: { id: 'id', transferred_at: 'transferred_at' },
  defaultSort: 'transferred_at:asc',
  filters: {},
  search: [],
};

// The transfer revives an authority that was deleted, revoked, inactive or expired: it is assigned anew.
const NOT_EFFECTIVE =
  '(authorities.is_deleted OR authorities.revoked_at IS NOT NULL OR NOT authorities.is_active OR authorities.expires_at <= now())';

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
    private readonly devices: DevicesRepository,
    private readonly authorities: AuthoritiesRepository,
    private readonly audit: AuditService,
    private readonly authorization: AuthorizationService,
  ) {}

  history(deviceId: number, query: Record<string, unknown>): Promise<ListResponse<OwnershipTransferDto>> {
    return runList<OwnershipTransferDto>(this.uow.reader, TRANSFER_LIST, parseListQuery(TRANSFER_LIST, query), {
      where: 'device_id = $1',
      params: [deviceId],
    });
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
      const actor = currentActorId();
      const [previous] = await tx.db.query<AuthorityRow[]>(
        `SELECT ${AUTHORITY_COLUMNS} FROM authorities WHERE device_id = $1 AND owner FOR UPDATE`,
        [deviceId],
      );
      // Demote first: the unique index allows one owner per device at every statement.
      const demoted = previous === undefined ? undefined : await this.demote(tx, previous, dto, actor);
      const [promoted] = await tx.db.query<AuthorityRow[]>(
        `INSERT INTO authorities (device_id, user_id, owner, created_by, updated_by, assigned_by) VALUES ($1, $2, true, $3, $3, $3)
         ON CONFLICT (device_id, user_id) DO UPDATE SET owner = true, is_active = true, revoked_at = NULL, revoked_by = NULL,
           revoke_reason = NULL, expires_at = NULL, is_deleted = false, deleted_at = NULL, deleted_by = NULL, updated_by = $3,
           assigned_by = CASE WHEN ${NOT_EFFECTIVE} THEN $3 ELSE authorities.assigned_by END,
           assigned_at = CASE WHEN ${NOT_EFFECTIVE} THEN now() ELSE authorities.assigned_at END
         RETURNING ${AUTHORITY_COLUMNS}`,
        [deviceId, dto.new_owner_user_id, actor],
      );
      if (promoted === undefined) throw new Error('owner authority upsert returned no row');
      const updatedDevice = await this.devices.update(tx, deviceId, 'owner_user_id = $2, updated_by = $3', [
        dto.new_owner_user_id,
        actor,
      ]);
      await tx.db.query(
        'INSERT INTO ownership_transfers (device_id, from_user_id, to_user_id, reason, transferred_by, request_id) VALUES ($1, $2, $3, $4, $5, $6)',
        [
          deviceId,
          device.owner_user_id,
          dto.new_owner_user_id,
          dto.reason ?? null,
          actor,
          currentRequest()?.request_id ?? null,
        ],
      );
      await this.audit.record(tx.db, {
        action: 'device.transfer_owner',
        resource_type: 'device',
        resource_id: deviceId,
        reason: dto.reason ?? null,
        changes: {
          owner_user_id: [device.owner_user_id, dto.new_owner_user_id],
          ...(demoted === undefined || demoted.revoked_at === null ? {} : { previous_owner_revoked: [false, true] }),
        },
      });
      await this.authorities.changed(tx, demoted === undefined ? [promoted] : [demoted, promoted]);
      this.devices.rebuildAfterCommit(tx, updatedDevice);
      const result: TransferResultDto = {
        device_id: deviceId,
        previous_owner: demoted === undefined ? null : withoutVersion(demoted),
        new_owner: withoutVersion(promoted),
      };
      return new ResourceResponse(result, { version: updatedDevice.version });
    });
  }

  private async assertTarget(tx: Tx, device: DeviceRow, userId: number): Promise<void> {
    const [user] = await tx.db.query<{ status_id: number; is_deleted: boolean }[]>(
      'SELECT status_id, is_deleted FROM users WHERE id = $1',
      [userId],
    );
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
    const assignments = revoke
      ? 'owner = false, is_active = false, revoked_at = now(), revoked_by = $2, revoke_reason = $3, updated_by = $2'
      : 'owner = false, updated_by = $2';
    return this.authorities.update(
      tx,
      previous.id,
      assignments,
      revoke ? [actor, dto.reason ?? 'ownership transferred'] : [actor],
    );
  }
}
