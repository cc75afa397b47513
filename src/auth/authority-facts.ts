import type { Decision } from './decision.js';

/** What layer 3c needs to know about one authority (a user's relationship to a device). */
export interface AuthorityFacts {
  readonly id: number;
  readonly device_id: number;
  readonly user_id: number;
  readonly owner: boolean;
  readonly is_active: boolean;
  readonly revoked: boolean;
  readonly deleted: boolean;
  /** ISO timestamp or null. */
  readonly expires_at: string | null;
  /** Codes of its active authority permissions. */
  readonly permissions: readonly string[];
}

/**
 * Layer 3c for one authority: effective (active, not revoked, not deleted, not expired) and
 * either the owner or holding the permission. Expiry is judged now, so an authority past
 * `expires_at` stops counting at once without any job. The guards, list row filtering, bulk
 * item checks and `/authz/check` all come through here.
 */
export function authorityDecision(authority: AuthorityFacts, permission: string, now: number): Decision | undefined {
  if (!authority.is_active || authority.revoked || authority.deleted) return undefined;
  if (authority.expires_at !== null && Date.parse(authority.expires_at) <= now) return undefined;
  if (authority.owner) return { allowed: true, decided_by: 'device_owner', authority_id: authority.id, grant_id: null };
  if (authority.permissions.includes(permission))
    return { allowed: true, decided_by: 'authority_permission', authority_id: authority.id, grant_id: null };
  return undefined;
}

/** SQL producing `AuthorityFacts` rows for `authorities a` (trusted text, no parameters). */
export const AUTHORITY_FACTS_SELECT = `a.id, a.device_id, a.user_id, a.owner, a.is_active, a.revoked_at IS NOT NULL AS revoked, a.is_deleted AS deleted,
  to_char(a.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires_at,
  ARRAY(SELECT p.code FROM authority_permissions ap JOIN permissions p ON p.id = ap.permission_id
        WHERE ap.authority_id = a.id AND ap.revoked_at IS NULL ORDER BY p.code) AS permissions`;
