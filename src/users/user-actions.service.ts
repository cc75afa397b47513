import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { deletionStamp, restorationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, type AuditAction } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { SessionsService } from '../access-model/sessions.service.js';
import { assertIfMatch, unchanged, type IfMatch } from '../platform/http/etag.js';
import { type NoContent, ResourceResponse } from '../platform/http/responses.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { PinResetDto, UserDto } from './dto/user.dto.js';
import { hashPin, newPin } from './pin.js';
import { assertTransition, TARGET_STATUS } from './user-lifecycle.js';
import { USER_STATUS } from '../platform/auth/roles.js';
import { assertMayWriteUser, assertNotSelf } from '../access-model/user-rules.js';
import { NOW, respondWith } from '../platform/projections/resource-table.js';
import { UsersRepository, type UserRow } from './users.repository.js';

/** Soft delete, restore and the lifecycle actions of part 6.1, each one transaction with its audit event. */
@Injectable()
export class UserActionsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly users: UsersRepository,
    private readonly sessions: SessionsService,
    private readonly audit: AuditService,
    private readonly access: AccessWatch,
  ) {}

  /** 200 with the deleted user; 204 when it already was. Revokes the user's sessions. */
  remove(actor: AuthContext, id: number, ifMatch: IfMatch): Promise<ResourceResponse<UserDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.users.lock(tx, id);
      // Who may not write the user learns nothing from a no-op either: 403 before 412 or 204.
      assertMayWriteUser(actor, before);
      if (before.is_deleted) return unchanged(ifMatch, before.version);
      assertNotSelf(actor, id, 'delete');
      assertIfMatch(ifMatch, before.version);
      await this.access.watch(tx, { users: [id] });
      const stamp = deletionStamp(tx);
      const after = await this.users.patch(tx, id, stamp);
      await this.audit.record(tx, 'user.delete', id, { before, changes: { is_deleted: [false, true] } });
      await this.sessions.revokeAllOf(tx, id, 'user deleted');
      return respondWith(after);
    });
  }

  /** 200 with the restored user; 204 when it was not deleted. Revoked sessions stay revoked. */
  restore(actor: AuthContext, id: number, ifMatch: IfMatch): Promise<ResourceResponse<UserDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.users.lock(tx, id);
      assertMayWriteUser(actor, before);
      if (!before.is_deleted) return unchanged(ifMatch, before.version);
      assertIfMatch(ifMatch, before.version);
      await this.access.watch(tx, { users: [id] });
      const after = await this.users.patch(tx, id, restorationStamp(tx));
      await this.audit.record(tx, 'user.restore', id, { before, changes: { is_deleted: [true, false] } });
      return respondWith(after);
    });
  }

  /** pending or suspended → active. */
  activate(actor: AuthContext, id: number, ifMatch: IfMatch): Promise<ResourceResponse<UserDto>> {
    return this.uow.run(async (tx) => {
      const before = await this.prepare(tx, actor, id, ifMatch, 'activate');
      const after = await this.setStatus(tx, before, TARGET_STATUS.activate, 'user.activate', null);
      return respondWith(after);
    });
  }

  /** pending or active → suspended; revokes the user's sessions at once. */
  suspend(
    actor: AuthContext,
    id: number,
    reason: string | undefined,
    ifMatch: IfMatch,
  ): Promise<ResourceResponse<UserDto>> {
    return this.uow.run(async (tx) => {
      const before = await this.users.lockLive(tx, id);
      assertNotSelf(actor, id, 'suspend');
      this.checkAction(before, actor, ifMatch, 'suspend');
      const after = await this.setStatus(tx, before, TARGET_STATUS.suspend, 'user.suspend', reason ?? null);
      await this.sessions.revokeAllOf(tx, id, reason ?? 'user suspended');
      return respondWith(after);
    });
  }

  /**
   * SCIM's `active` (part 6.19) on the locked live user `before`, in the caller's transaction:
   * true activates a pending or suspended user; false suspends a pending or active one and revokes
   * every session at once. `before` when it already is so. `created`: the user was inserted by
   * this transaction (so it held nothing before it, and that side of the access watch is not read).
   */
  async setActiveIn(tx: Tx, actor: AuthContext, before: UserRow, active: boolean, created = false): Promise<UserRow> {
    if (active ? before.status_id === USER_STATUS.active : before.status_id === USER_STATUS.suspended) return before;
    const action = active ? 'activate' : 'suspend';
    if (!active) assertNotSelf(actor, before.id, 'suspend');
    this.checkAction(before, actor, undefined, action);
    const reason = active ? null : 'deactivated by the identity provider (SCIM)';
    const after = await this.setStatus(tx, before, TARGET_STATUS[action], `user.${action}`, reason, created);
    if (!active) await this.sessions.revokeAllOf(tx, before.id, reason ?? 'user suspended');
    return after;
  }

  /** Stores the hash of a new random 6-digit PIN and returns the PIN, in this response only. */
  async resetPin(actor: AuthContext, id: number, ifMatch: IfMatch): Promise<ResourceResponse<PinResetDto>> {
    const pin = newPin();
    const pinHash = await hashPin(pin);
    return this.uow.run(async (tx) => {
      const before = await this.prepare(tx, actor, id, ifMatch, 'reset_pin');
      const after = await this.users.patch(tx, id, { pin_hash: pinHash, pin_reset_at: NOW, ...updateStamp(tx) });
      await this.audit.record(tx, 'user.reset_pin', id, {
        before,
        changes: { pin_set: [before.pin_set, true], pin_reset_at: [before.pin_reset_at, after.pin_reset_at] },
      });
      const result: PinResetDto = {
        user_id: id,
        temporary_pin: pin,
        pin_reset_at: after.pin_reset_at ?? new Date().toISOString(),
      };
      return new ResourceResponse(result, { version: after.version, secretFields: ['temporary_pin'] });
    });
  }

  private async prepare(
    tx: Tx,
    actor: AuthContext,
    id: number,
    ifMatch: IfMatch,
    action: 'activate' | 'reset_pin',
  ): Promise<UserRow> {
    const before = await this.users.lockLive(tx, id);
    this.checkAction(before, actor, ifMatch, action);
    return before;
  }

  private checkAction(
    before: UserRow,
    actor: AuthContext,
    ifMatch: IfMatch,
    action: 'activate' | 'suspend' | 'reset_pin',
  ): void {
    assertMayWriteUser(actor, before);
    assertIfMatch(ifMatch, before.version);
    assertTransition(before.status_id, action);
  }

  private async setStatus(
    tx: Tx,
    before: UserRow,
    statusId: number,
    action: AuditAction,
    reason: string | null,
    created = false,
  ): Promise<UserRow> {
    await this.access.watch(tx, { users: [before.id], created });
    const after = await this.users.patch(tx, before.id, { status_id: statusId, ...updateStamp(tx) });
    await this.audit.record(tx, action, before.id, {
      before,
      reason,
      changes: { status_id: [before.status_id, statusId] },
    });
    return after;
  }
}
