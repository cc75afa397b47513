import { Injectable } from '@nestjs/common';
import { accessPaths } from '../access-model/access-rules.js';
import type { Subject } from '../platform/auth/auth-context.js';
import { AuthContextService } from '../access-model/auth-context.service.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import { AuthorizationService } from '../access-model/authorization.service.js';
import { isDeviceScoped, isPermissionCode, PERMISSIONS } from '../platform/auth/permissions.js';
import { roleById, ROLES, USER_STATUS } from '../platform/auth/roles.js';
import type { Scope } from '../platform/http/list/list-sql.js';
import type { UserReference } from '../users/user-references.repository.js';
import { ApiError } from '../platform/http/api-error.js';
import { AccessRequestsRepository, type DecidablePairs } from './access-requests.repository.js';

export const APPROVE = 'access_requests.approve';
const APPROVE_ID = PERMISSIONS.find((permission) => permission.code === APPROVE)?.id ?? 49;
/** Subjects judged side by side: enough to overlap their reads, few enough to leave the pool to others. */
const JUDGED_AT_ONCE = 8;
const DEVICE_SCOPED = PERMISSIONS.filter((permission) => isDeviceScoped(permission.code));

/** Why a request cannot be asked for, or granted (details.reason of 422 ACCESS_REQUEST_INVALID). */
export type InvalidReason = 'not_device_scoped' | 'no_authority' | 'already_allowed' | 'requester_not_active';

export function accessRequestInvalid(reason: InvalidReason, details: Readonly<Record<string, unknown>>): ApiError {
  const why: Record<InvalidReason, string> = {
    not_device_scoped: 'the permission is not device-scoped',
    no_authority: 'the requester holds no live authority on the device',
    already_allowed: 'the requester is already allowed the permission on the device',
    requester_not_active: 'the requester is not an active user',
  };
  return new ApiError('ACCESS_REQUEST_INVALID', `The access cannot be requested or granted: ${why[reason]}`, {
    reason,
    ...details,
  });
}

/** What a request is about. */
export interface Asked {
  readonly requester_id: number;
  readonly device_id: number;
  readonly permission_code: string;
}

/**
 * Who may see, decide and be asked about access requests (part 6.15), judged by the guards' own
 * evaluator (`AuthorizationService`, over `access-rules.ts`): a decider is allowed
 * `access_requests.approve` on the request's device and the requested permission there (the
 * delegation rule of part 5).
 */
@Injectable()
export class AccessRequestRules {
  constructor(
    private readonly authorization: AuthorizationService,
    private readonly contexts: AuthContextService,
    private readonly rows: AccessRequestsRepository,
  ) {}

  /** Allowed to decide by role or grant: sees every request. */
  decidesEverywhere(actor: Subject): boolean {
    return this.authorization.decideGlobally(actor, APPROVE).allowed;
  }

  async mayDecide(subject: Subject, asked: Pick<Asked, 'device_id' | 'permission_code'>): Promise<boolean> {
    if (!isPermissionCode(asked.permission_code)) return false;
    const [approve, permission] = await Promise.all([
      this.authorization.decide(subject, APPROVE, asked.device_id),
      this.authorization.decide(subject, asked.permission_code, asked.device_id),
    ]);
    return approve.allowed && permission.allowed;
  }

  /**
   * When what an approval hands on must end (part 5): the end of the decider's own last way to the
   * permission on the device; null when one of its ways does not end.
   */
  approvalLimit(subject: Subject, asked: Pick<Asked, 'device_id' | 'permission_code'>): Promise<Date | null> {
    return this.authorization.delegationLimit(subject, asked.permission_code, asked.device_id);
  }

  /**
   * Whether `userId` may decide the request now, from its subject as it is now (not the one its
   * request was authenticated with): asked again once the request's row is locked, so a right
   * lost while the decision waited for that lock hands nothing on.
   */
  async stillMayDecide(userId: number, asked: Pick<Asked, 'device_id' | 'permission_code'>): Promise<boolean> {
    const subject = await this.contexts.subjectOf(userId);
    return subject !== undefined && subject.active && (await this.mayDecide(subject, asked));
  }

  async maySee(actor: Subject, asked: Asked): Promise<boolean> {
    return (
      this.decidesEverywhere(actor) || asked.requester_id === actor.user_id || (await this.mayDecide(actor, asked))
    );
  }

  /**
   * List row filtering: none for whoever decides everywhere; else its own, and those on devices
   * where it may approve and is allowed the requested permission: every request on a device where
   * it is allowed every device-scoped permission (an owner's: one id, not twenty pairs), and the
   * (device, permission) pairs elsewhere.
   */
  async listScope(actor: Subject): Promise<Scope | undefined> {
    if (this.decidesEverywhere(actor)) return undefined;
    const rights = await this.authorization.deviceScopedRights(actor);
    const decidable: DecidablePairs = { whole_device_ids: [], device_ids: [], permission_ids: [] };
    for (const [deviceId, allowed] of [...rights].sort(([a], [b]) => a - b)) {
      if (!allowed.has(APPROVE)) continue;
      if (allowed.size === DEVICE_SCOPED.length) decidable.whole_device_ids.push(deviceId);
      else
        for (const permission of DEVICE_SCOPED)
          if (allowed.has(permission.code)) {
            decidable.device_ids.push(deviceId);
            decidable.permission_ids.push(permission.id);
          }
    }
    return this.rows.visibleTo(actor.user_id, decidable);
  }

  /**
   * Whether the requester may still be given the access: an active user, holding an effective
   * authority on the device (`authority`, read under its lock), not already allowed the permission
   * there by any layer. The requester's role and grants come from its auth context, its standing
   * from `user` (read in the caller's transaction).
   */
  async assertGrantable(
    asked: Asked,
    user: UserReference | undefined,
    authority: AuthorityFacts | undefined,
  ): Promise<void> {
    const details = { device_id: asked.device_id, permission_code: asked.permission_code };
    // The requester as the guards judge it: its effective role (its groups' included), its grants.
    const live = user === undefined ? undefined : await this.contexts.subjectOf(asked.requester_id);
    const role = live?.role ?? (user === undefined ? undefined : roleById(user.role_id));
    // A role without admin access (a member) is allowed nothing at all (layer 2): not a requester to grant.
    if (
      user === undefined ||
      role === undefined ||
      !role.admin_access ||
      user.is_deleted ||
      user.status_id !== USER_STATUS.active
    )
      throw accessRequestInvalid('requester_not_active', { ...details, requester_id: asked.requester_id });
    const now = Date.now();
    const effective =
      authority !== undefined &&
      authority.is_active &&
      !authority.revoked &&
      !authority.deleted &&
      (authority.expires_at === null || Date.parse(authority.expires_at) > now);
    if (!effective) throw accessRequestInvalid('no_authority', details);
    const subject: Subject = { ...(live ?? { user_id: asked.requester_id, grants: [] }), role, active: true };
    // Its own authority as locked, and (through the evaluator) what its groups hold on the device.
    const allowed =
      accessPaths(subject, [authority], asked.permission_code, now).length > 0 ||
      (isPermissionCode(asked.permission_code) &&
        (await this.authorization.decide(subject, asked.permission_code, asked.device_id)).allowed);
    if (allowed) throw accessRequestInvalid('already_allowed', { ...details, authority_id: authority.id });
  }

  /**
   * The approvers to notify of a request (part 6.15): those allowed to decide through the device
   * or a grant (layers 3c and 3b), or, when there are none, those allowed by role. In user id
   * order. Role holders are judged only when nobody closer may decide: a registry has many admins,
   * and each judgement reads a subject.
   */
  async approvers(asked: Asked): Promise<{ readonly notified: number[] }> {
    const candidates = (byRole: boolean): Promise<number[]> =>
      this.rows.approverCandidates({
        requesterId: asked.requester_id,
        deviceId: asked.device_id,
        roleIds: byRole
          ? ROLES.filter((role) => role.admin_access && role.permissions.has(APPROVE)).map((role) => role.id)
          : [],
        approveId: APPROVE_ID,
        activeStatusId: USER_STATUS.active,
      });
    const close = await candidates(false);
    const judged = await this.judge(close, asked);
    const closer = judged.filter((entry) => !entry.byRoleOnly);
    if (closer.length > 0) return { notified: closer.map((entry) => entry.userId) };
    const judgedAlready = new Set(close);
    const others = (await candidates(true)).filter((userId) => !judgedAlready.has(userId));
    const all = [...judged, ...(await this.judge(others, asked))].map((entry) => entry.userId);
    return { notified: all.sort((a, b) => a - b) };
  }

  /** Who of `userIds` may decide the request, and whether only by role; a few at a time (one subject read each). */
  private async judge(
    userIds: readonly number[],
    asked: Asked,
  ): Promise<{ readonly userId: number; readonly byRoleOnly: boolean }[]> {
    const approvers: { readonly userId: number; readonly byRoleOnly: boolean }[] = [];
    for (let start = 0; start < userIds.length; start += JUDGED_AT_ONCE) {
      const batch = await Promise.all(
        userIds.slice(start, start + JUDGED_AT_ONCE).map(async (userId) => {
          const subject = await this.contexts.subjectOf(userId);
          if (subject === undefined || !(await this.mayDecide(subject, asked))) return undefined;
          const ways = await this.authorization.explain(subject, APPROVE, asked.device_id);
          return { userId, byRoleOnly: ways.every((way) => way.decided_by === 'role') };
        }),
      );
      for (const entry of batch) if (entry !== undefined) approvers.push(entry);
    }
    return approvers;
  }
}
