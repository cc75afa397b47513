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
  /** Codes of its active authority permissions. */
  readonly permissions: readonly string[];
}
