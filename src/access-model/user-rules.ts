import type { Subject } from '../platform/auth/auth-context.js';
import { ROLE, roleById } from '../platform/auth/roles.js';
import { ApiError } from '../platform/http/api-error.js';

/** What part 5 forbids anyone to do to themselves. */
export type SelfAction = 'suspend' | 'delete' | 'revoke_sessions' | 'change_role' | 'grant';

const SELF_MESSAGES: Readonly<Record<SelfAction, string>> = {
  suspend: 'You cannot suspend yourself',
  delete: 'You cannot delete yourself',
  revoke_sessions: 'You cannot revoke your own sessions',
  change_role: 'You cannot change your own role',
  grant: 'You cannot grant a permission to yourself',
};

/** Nobody may suspend, delete, revoke the sessions of, re-role or grant to themselves (part 5). */
export function assertNotSelf(actor: Pick<Subject, 'user_id'>, userId: number, action: SelfAction): void {
  if (actor.user_id === userId)
    throw new ApiError('SELF_ACTION_FORBIDDEN', SELF_MESSAGES[action], { action, user_id: userId });
}

/** Role rank (part 5): super_admin > admin > operator > viewer > member; the seeded ids follow it. */
export function outranks(actorRoleId: number, targetRoleId: number): boolean {
  return actorRoleId < targetRoleId;
}

function escalation(targetRoleId: number, message: string): ApiError {
  return new ApiError('ROLE_ESCALATION_FORBIDDEN', message, { target_role_id: targetRoleId });
}

/**
 * Any write on another user needs an actor whose role outranks the target's; a super_admin may
 * act on another super_admin. A write on oneself is left to the self rules.
 */
export function assertMayWriteUser(
  actor: Pick<Subject, 'user_id' | 'role'>,
  target: { readonly id: number; readonly role_id: number; readonly effective_role_id?: number },
): void {
  if (actor.user_id === target.id || actor.role.id === ROLE.super_admin) return;
  // The target's effective role: a role given through a group protects its holder as its own does.
  const roleId = target.effective_role_id ?? target.role_id;
  if (!outranks(actor.role.id, roleId)) {
    throw escalation(
      roleId,
      `Your role (${actor.role.code}) does not outrank the target's role (${roleById(roleId)?.code ?? roleId})`,
    );
  }
}

/**
 * A role is given or taken only by an actor who outranks both the old and the new role; a
 * super_admin may give any role. The role must exist.
 */
export function assertMayAssignRole(actor: Pick<Subject, 'role'>, fromRoleId: number | null, toRoleId: number): void {
  if (roleById(toRoleId) === undefined)
    throw new ApiError('ROLE_NOT_FOUND', `Role ${toRoleId} does not exist`, { role_id: toRoleId });
  if (fromRoleId === toRoleId || actor.role.id === ROLE.super_admin) return;
  for (const roleId of [toRoleId, fromRoleId]) {
    if (roleId !== null && !outranks(actor.role.id, roleId)) {
      throw escalation(
        roleId,
        `Your role (${actor.role.code}) must outrank both the old and the new role to change a role`,
      );
    }
  }
}
