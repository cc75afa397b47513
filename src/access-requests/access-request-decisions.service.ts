import { Injectable } from '@nestjs/common';
import { AuthorityReferences } from '../authorities/authority-references.repository.js';
import { AuthorityPermissionsService } from '../grants/authority-permissions.service.js';
import { MessagesService } from '../inbox/messages.service.js';
import { updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { delegationForbidden, earlierEnd } from '../access-model/authorization.service.js';
import { permissionDenied } from '../platform/auth/access-evaluator.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { ApiError } from '../platform/http/api-error.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import type { ResourceResponse } from '../platform/http/responses.js';
import { NOW, respondWith } from '../platform/projections/resource-table.js';
import { UserReferences } from '../users/user-references.repository.js';
import { outcomeNotice } from './access-request-notices.js';
import { accessRequestInvalid, AccessRequestRules } from './access-request-rules.service.js';
import { AccessRequestsRepository, type AccessRequestRow } from './access-requests.repository.js';
import { durationTooLong } from './access-requests.service.js';
import type {
  AccessRequestDto,
  ApproveAccessRequestDto,
  CancelAccessRequestDto,
  DenyAccessRequestDto,
} from './dto/access-request.dto.js';

type Decision = 'approve' | 'deny' | 'cancel';

/**
 * Approve, deny and cancel (part 6.15). Each is one transaction that locks the request first, so
 * of two deciders at once exactly one finds it pending; an approval also locks the requester's
 * authority, so it and a revocation of that authority take turns and an approval never lands on
 * a revoked authority.
 */
@Injectable()
export class AccessRequestDecisions {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly rows: AccessRequestsRepository,
    private readonly rules: AccessRequestRules,
    private readonly audit: AuditService,
    private readonly messages: MessagesService,
    private readonly grants: AuthorityPermissionsService,
    private readonly authorityReferences: AuthorityReferences,
    private readonly userReferences: UserReferences,
  ) {}

  async approve(
    actor: AuthContext,
    id: number,
    dto: ApproveAccessRequestDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<AccessRequestDto>> {
    const asked = await this.decidable(actor, id, 'approve');
    if (dto.duration_seconds !== undefined && dto.duration_seconds > asked.duration_seconds)
      throw durationTooLong(asked.duration_seconds, 'an approval may only shorten the duration asked for');
    const duration = dto.duration_seconds ?? asked.duration_seconds;
    const reason = dto.reason ?? null;
    return this.uow.run(async (tx) => {
      const before = await this.lockDecidable(tx, actor, id, ifMatch, 'approve');
      const authority = await this.authorityReferences.lockedFacts(tx.db, before.device_id, before.requester_id);
      const user = await this.userReferences.user(tx.db, before.requester_id);
      await this.rules.assertGrantable(before, user, authority);
      if (authority === undefined) throw accessRequestInvalid('no_authority', { device_id: before.device_id });
      // An approver with a just-in-time right of its own hands on no more than it holds (part 5).
      const accessExpiresAt =
        earlierEnd(new Date(Date.now() + duration * 1000), await this.rules.approvalLimit(actor, before)) ??
        new Date(Date.now() + duration * 1000);
      const granted = await this.grants
        .grantExpiring(tx, {
          authorityId: authority.id,
          permissionId: before.permission_id,
          expiresAt: accessExpiresAt,
          actorId: actor.user_id,
          reason: `access request ${id}`,
        })
        .catch((error: unknown) => {
          // Held already (unexpired) although the rules above found it not allowed: still allowed.
          if (error instanceof ApiError && error.code === 'AUTHORITY_PERMISSION_EXISTS')
            throw accessRequestInvalid('already_allowed', { device_id: before.device_id, authority_id: authority.id });
          throw error;
        });
      const after = await this.rows.patch(tx, id, {
        state: 'approved',
        decided_by: actor.user_id,
        decided_at: NOW,
        decision_reason: reason,
        authority_permission_id: granted.id,
        access_expires_at: accessExpiresAt,
        ...updateStamp(tx),
      });
      await this.decided(tx, 'access_request.approved', before, after);
      return respondWith(after);
    });
  }

  async deny(
    actor: AuthContext,
    id: number,
    dto: DenyAccessRequestDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<AccessRequestDto>> {
    await this.decidable(actor, id, 'deny');
    return this.uow.run(async (tx) => {
      const before = await this.lockDecidable(tx, actor, id, ifMatch, 'deny');
      const after = await this.close(tx, id, 'denied', dto.reason);
      await this.decided(tx, 'access_request.denied', before, after);
      return respondWith(after);
    });
  }

  /** The requester only: anyone else who may see the request gets 403, anyone who may not 404. */
  async cancel(
    actor: AuthContext,
    id: number,
    dto: CancelAccessRequestDto,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<AccessRequestDto>> {
    const asked = await this.found(id);
    if (asked.requester_id !== actor.user_id) {
      if (!(await this.rules.maySee(actor, asked))) throw ApiError.notFound('ACCESS_REQUEST_NOT_FOUND', id);
      const denied = permissionDenied('access_requests.create');
      throw new ApiError(denied.code, 'Only the requester may cancel an access request', {
        ...denied.details,
        access_request_id: id,
        reason: 'requester_only',
      });
    }
    return this.uow.run(async (tx) => {
      const before = await this.lockPending(tx, id, ifMatch, 'cancel');
      const after = await this.close(tx, id, 'cancelled', dto.reason ?? null);
      await this.audit.record(tx, 'access_request.cancelled', id, {
        before,
        reason: after.decision_reason,
        changes: { state: [before.state, after.state] },
      });
      return respondWith(after);
    });
  }

  private async found(id: number): Promise<AccessRequestRow> {
    const row = await this.rows.find(this.uow.reader, id);
    if (row === undefined) throw ApiError.notFound('ACCESS_REQUEST_NOT_FOUND', id);
    return row;
  }

  /**
   * What approve and deny check before the transaction (none of it changes with the request's
   * state): nobody decides its own request (422), and a decider holds the requested permission on
   * the device (403 `DELEGATION_FORBIDDEN`; the guard has checked `access_requests.approve`).
   */
  private async decidable(actor: AuthContext, id: number, action: 'approve' | 'deny'): Promise<AccessRequestRow> {
    const asked = await this.found(id);
    if (asked.requester_id === actor.user_id)
      throw new ApiError('SELF_ACTION_FORBIDDEN', `You cannot ${action} your own access request`, {
        action,
        access_request_id: id,
        user_id: actor.user_id,
      });
    if (!(await this.rules.mayDecide(actor, asked))) throw delegationForbidden(asked.permission_code, asked.device_id);
    return asked;
  }

  /** The request under its row lock, still pending (its expiry not passed), at the version `If-Match` names. */
  private async lockPending(tx: Tx, id: number, ifMatch: IfMatch, action: Decision): Promise<AccessRequestRow> {
    const locked = await this.rows.lock(tx, id);
    assertIfMatch(ifMatch, locked.version);
    // Every reader sees a pending request past its expiry as expired, whoever has yet to record it.
    const state = locked.state === 'pending' && (await this.rows.lapsed(tx, id)) ? 'expired' : locked.state;
    const before = { ...locked, state };
    if (before.state !== 'pending')
      throw new ApiError('INVALID_STATE_TRANSITION', `Access request ${id} is ${before.state}, not pending`, {
        from: before.state,
        action,
        access_request_id: id,
      });
    return before;
  }

  /** Approve and deny under the request's lock: the decider's rights as they are now, not as authenticated. */
  private async lockDecidable(
    tx: Tx,
    actor: AuthContext,
    id: number,
    ifMatch: IfMatch,
    action: 'approve' | 'deny',
  ): Promise<AccessRequestRow> {
    const before = await this.lockPending(tx, id, ifMatch, action);
    if (!(await this.rules.stillMayDecide(actor.user_id, before)))
      throw delegationForbidden(before.permission_code, before.device_id);
    return before;
  }

  private close(tx: Tx, id: number, state: 'denied' | 'cancelled', reason: string | null): Promise<AccessRequestRow> {
    return this.rows.patch(tx, id, {
      state,
      decided_by: updateStamp(tx).updated_by,
      decided_at: NOW,
      decision_reason: reason,
      ...updateStamp(tx),
    });
  }

  /** A decision's event and the requester's message. */
  private async decided(
    tx: Tx,
    action: 'access_request.approved' | 'access_request.denied',
    before: AccessRequestRow,
    after: AccessRequestRow,
  ): Promise<void> {
    const changes: Record<string, readonly [unknown, unknown]> = { state: [before.state, after.state] };
    if (after.authority_permission_id !== null) {
      changes.authority_permission_id = [null, after.authority_permission_id];
      changes.access_expires_at = [null, new Date(after.access_expires_at ?? 0).toISOString()];
    }
    await this.audit.record(tx, action, after.id, { before, reason: after.decision_reason, changes });
    await this.messages.notify(tx, outcomeNotice(after));
  }
}
