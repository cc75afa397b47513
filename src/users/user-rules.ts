import type { AuthContext } from '../auth/auth-context.js';
import { isPrivilegedRole, ROLE, roleById } from '../auth/roles.js';
import { ApiError } from '../common/api-error.js';

/** Nobody may suspend or delete themselves (part 5). */
export function assertNotSelf(actor: AuthContext, userId: number, action: 'suspend' | 'delete'): void {
  if (actor.user_id === userId) {
    throw new ApiError('SELF_ACTION_FORBIDDEN', `You cannot ${action} yourself`, { action, user_id: userId });
  }
}

/**
 * Only a super_admin may change a super_admin in any way: otherwise an admin could take over
 * or lock out the accounts above it (suspend, delete, reset its PIN). Our reading of part 5's
 * escalation rule; see the README's decisions.
 */
export function assertMayManage(actor: AuthContext, targetRoleId: number): void {
  if (targetRoleId === ROLE.super_admin && actor.role.id !== ROLE.super_admin) {
    throw new ApiError('ROLE_ESCALATION_FORBIDDEN', 'Only a super_admin may change a super_admin', { role_id: targetRoleId });
  }
}

/** Giving or taking super_admin or admin is reserved to super_admin (part 5); the role must exist. */
export function assertMayAssignRole(actor: AuthContext, fromRoleId: number | null, toRoleId: number): void {
  if (roleById(toRoleId) === undefined) throw new ApiError('ROLE_NOT_FOUND', `Role ${toRoleId} does not exist`, { role_id: toRoleId });
  if (fromRoleId === toRoleId) return;
  const privileged = isPrivilegedRole(toRoleId) || (fromRoleId !== null && isPrivilegedRole(fromRoleId));
  if (privileged && actor.role.id !== ROLE.super_admin) {
    throw new ApiError('ROLE_ESCALATION_FORBIDDEN', 'Only a super_admin may give or take the roles super_admin and admin', {
      role_id: toRoleId,
      ...(fromRoleId === null ? {} : { from_role_id: fromRoleId }),
    });
  }
}
