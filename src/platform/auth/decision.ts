/** Which layer of part 5 allowed a permission. */
export type DecidedBy = 'role' | 'permission_grant' | 'device_owner' | 'authority_permission';

/** The answer of the evaluator; `/authz/check` returns it as is. */
export interface Decision {
  readonly allowed: boolean;
  readonly decided_by: DecidedBy | null;
  readonly authority_id: number | null;
  readonly grant_id: number | null;
}

export const DENIED: Decision = { allowed: false, decided_by: null, authority_id: null, grant_id: null };
