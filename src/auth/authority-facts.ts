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
