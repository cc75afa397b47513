/** One authority permission as layer 3c needs it: its code and when it stops allowing anything. */
export interface HeldPermission {
  readonly code: string;
  /** ISO timestamp or null (never expires). */
  readonly expires_at: string | null;
}

/**
 * What layer 3c needs to know about one authority (a user's or a group's relationship to a
 * device), now or at a moment. A group's authority as a device's set holds it has `user_id` null;
 * as one member holds it (its context, a snapshot), `user_id` is that member, `via` the chain of
 * groups that reaches the group, and `expires_at` the earlier of the authority's and the chain's.
 */
export interface AuthorityFacts {
  readonly id: number;
  readonly device_id: number;
  readonly user_id: number | null;
  /** The group holding it (v1.3); null for a user's own authority. */
  readonly group_id?: number | null;
  /** For a group's authority held by a member: group ids from the member's own group to `group_id`. */
  readonly via?: readonly number[];
  readonly owner: boolean;
  readonly is_active: boolean;
  readonly revoked: boolean;
  readonly deleted: boolean;
  /** ISO timestamp or null. */
  readonly expires_at: string | null;
  /**
   * Its live (unrevoked) authority permissions, each with its own expiry: the rules judge that
   * expiry at the moment asked, so a cached set never allows a permission past its instant.
   */
  readonly authority_permissions: readonly HeldPermission[];
}
