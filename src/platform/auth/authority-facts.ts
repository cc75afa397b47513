/** One authority permission as layer 3c needs it: its code and when it stops allowing anything. */
export interface HeldPermission {
  readonly code: string;
  /** ISO timestamp or null (never expires). */
  readonly expires_at: string | null;
}

/** What layer 3c needs to know about one authority (a user's relationship to a device), now or at a moment. */
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
  /**
   * Its live (unrevoked) authority permissions, each with its own expiry: the rules judge that
   * expiry at the moment asked, so a cached set never allows a permission past its instant.
   */
  readonly authority_permissions: readonly HeldPermission[];
}
