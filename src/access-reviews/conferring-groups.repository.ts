import { MAX_GROUP_DEPTH } from '../access-model/group-rules.js';

const LIVE_GRANT = '(g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now()))';
const LIVE_AUTHORITY = 'a.revoked_at IS NULL AND NOT a.is_deleted AND (a.expires_at IS NULL OR a.expires_at > now())';
const LIVE_AP = '(ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now()))';
const LIVE_NESTING = '(m.removed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now()))';

/** The scope a campaign or a findings page names, as trusted SQL predicates over its parameters. */
export interface ConferringScope {
  /** A group carrying a role counts when this holds of `grp.role_id` (absent: roles never count). */
  readonly role?: (column: string) => string;
  /** True when devices are named: grants (everywhere) then do not count. */
  readonly devicesNamed: string;
  /** The authority's device is in scope. */
  readonly onDevice: (column: string) => string;
  /** The permission is in scope. */
  readonly permitted: (column: string) => string;
}

/**
 * Trusted text, a recursive CTE `conferring(group_id, depth, via)`: the live groups whose members
 * receive something in scope (a role, a live grant unless devices are named, a live authority with
 * a live authority permission), each with the live groups nested below it, as deep as nesting goes.
 * A user's membership in one of them is a review item, or an unused-membership finding.
 */
export function conferringGroups(scope: ConferringScope): string {
  return `conferring(group_id, depth, via) AS (
    SELECT grp.id, 1, ARRAY[grp.id] FROM groups grp
    WHERE NOT grp.is_deleted AND (${scope.role === undefined ? 'false' : scope.role('grp.role_id')}
      OR (NOT (${scope.devicesNamed}) AND EXISTS (SELECT 1 FROM permission_grants g WHERE g.group_id = grp.id
            AND ${LIVE_GRANT} AND ${scope.permitted('g.permission_id')}))
      OR EXISTS (SELECT 1 FROM authorities a JOIN authority_permissions ap ON ap.authority_id = a.id
            WHERE a.group_id = grp.id AND ${LIVE_AUTHORITY} AND ${LIVE_AP}
              AND ${scope.onDevice('a.device_id')} AND ${scope.permitted('ap.permission_id')}))
    UNION ALL
    SELECT m.member_group_id, c.depth + 1, c.via || m.member_group_id
    FROM conferring c JOIN group_memberships m ON m.group_id = c.group_id AND m.member_group_id IS NOT NULL AND ${LIVE_NESTING}
    WHERE c.depth < ${MAX_GROUP_DEPTH} AND m.member_group_id <> ALL (c.via)
      AND EXISTS (SELECT 1 FROM groups sub WHERE sub.id = m.member_group_id AND NOT sub.is_deleted))`;
}
