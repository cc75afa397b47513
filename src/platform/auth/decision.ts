/** Which layer of part 5 allows a permission (the `group_` ways: through a group the user belongs to), in order of precedence. */
export const DECIDED_BY = [
  'role',
  'permission_grant',
  'group_permission_grant',
  'device_owner',
  'authority_permission',
  'group_authority_permission',
] as const;
export type DecidedBy = (typeof DECIDED_BY)[number];

/** The answer of the evaluator; `/authz/check` returns it as is. */
export interface Decision {
  readonly allowed: boolean;
  readonly decided_by: DecidedBy | null;
  readonly authority_id: number | null;
  readonly grant_id: number | null;
  /** The group holding the deciding right (or conferring the deciding role); null when the user holds it itself. */
  readonly group_id: number | null;
}

export const DENIED: Decision = {
  allowed: false,
  decided_by: null,
  authority_id: null,
  grant_id: null,
  group_id: null,
};
