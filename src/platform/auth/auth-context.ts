import type { FastifyRequest } from 'fastify';
import type { AuthorityFacts } from './authority-facts.js';
import type { RoleDefinition } from './roles.js';

/**
 * A live permission grant (layer 3b), the user's own or one held by a group it belongs to; expiry
 * is judged at each decision. A group's grant carries the group and the chain of groups that
 * reaches it, and its `expires_at` is the earlier of the grant's and the membership chain's.
 */
export interface GrantFacts {
  readonly id: number;
  readonly code: string;
  readonly expires_at: string | null;
  readonly group_id?: number | null;
  readonly via?: readonly number[];
}

/**
 * A group the user belongs to (directly or through nested groups), as one lasting chain of
 * memberships: `via` runs from the user's own group to this one, `expires_at` is the earliest
 * expiry along it (null: never). `role_id` is the role the group confers, if any.
 */
export interface GroupFacts {
  readonly group_id: number;
  readonly role_id: number | null;
  readonly via: readonly number[];
  readonly expires_at: string | null;
}

/** Whose permissions are evaluated: a user's role, standing and live grants. */
export interface Subject {
  readonly user_id: number;
  /** The effective role (part 5): the highest of the user's own and those of the groups it belongs to. */
  readonly role: RoleDefinition;
  /** The group conferring the effective role, when a group's role outranks the user's own; else null or absent. */
  readonly role_group_id?: number | null;
  /** The groups the user belongs to (judged live when the subject was built); absent: none read. */
  readonly groups?: readonly GroupFacts[];
  /** Active and not deleted: a pending, suspended or deleted user is allowed nothing. */
  readonly active: boolean;
  readonly grants: readonly GrantFacts[];
  /**
   * The subject's own live authorities with their authority permissions (layer 3c), carried with
   * its auth context when it holds at most `AUTH_CONTEXT_AUTHORITIES` of them, so a device check needs
   * no lookup of the device's authority set; null (or absent) when it holds more or they were not
   * read: the device's set is asked then.
   */
  readonly authorities?: readonly AuthorityFacts[] | null;
}

/** Who is calling: the verified token's session and user, with the user's role and grants. */
export interface AuthContext extends Subject {
  readonly session_id: string;
}

// Kept beside the request rather than on it: no augmentation of Fastify's or passport's types.
const contexts = new WeakMap<FastifyRequest, AuthContext>();

export function attachAuthContext(request: FastifyRequest, context: AuthContext): void {
  contexts.set(request, context);
}

export function authContextOf(request: FastifyRequest): AuthContext | undefined {
  return contexts.get(request);
}
