import type { GroupFacts } from '../platform/auth/auth-context.js';
import { roleById, type RoleDefinition } from '../platform/auth/roles.js';

/** The deepest nesting of groups (part 6.18): a chain of at most this many groups. */
export const MAX_GROUP_DEPTH = 5;

const live = (group: GroupFacts, at: number): boolean => group.expires_at === null || Date.parse(group.expires_at) > at;

/** The groups the user still belongs to at `at` (a membership ends at its instant, with no write). */
export function groupsAt(groups: readonly GroupFacts[] | undefined, at: number): GroupFacts[] {
  return (groups ?? []).filter((group) => live(group, at));
}

/**
 * The effective role of part 5: the highest-ranked of the user's own role and the roles of the
 * groups it belongs to at `at` (ranks follow the seeded ids, 1 highest). `group_id` names the group
 * conferring it when a group's role outranks the user's own (the first such group, by id).
 */
export function effectiveRole(
  ownRoleId: number,
  groups: readonly GroupFacts[] | undefined,
  at: number,
): { readonly role: RoleDefinition | undefined; readonly group_id: number | null } {
  let best = ownRoleId;
  let from: number | null = null;
  for (const group of groupsAt(groups, at))
    if (group.role_id !== null && roleById(group.role_id) !== undefined && group.role_id < best) {
      best = group.role_id;
      from = group.group_id;
    }
  return { role: roleById(best), group_id: from };
}

/** Why a nesting is refused (422 `GROUP_NESTING_INVALID`, `details.reason`), if it is. */
export function nestingProblem(
  groupId: number,
  memberGroupId: number,
  below: { readonly contains: readonly number[]; readonly height: number },
  aboveHeight: number,
): 'cycle' | 'depth' | undefined {
  if (memberGroupId === groupId || below.contains.includes(groupId)) return 'cycle';
  if (aboveHeight + below.height > MAX_GROUP_DEPTH) return 'depth';
  return undefined;
}
