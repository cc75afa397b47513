import type { FastifyRequest } from 'fastify';
import type { AuthorityFacts } from './authority-facts.js';
import type { RoleDefinition } from './roles.js';

/** A live user-level permission grant (layer 3b); expiry is judged at each decision. */
export interface GrantFacts {
  readonly id: number;
  readonly code: string;
  readonly expires_at: string | null;
}

/** Whose permissions are evaluated: a user's role, standing and live grants. */
export interface Subject {
  readonly user_id: number;
  readonly role: RoleDefinition;
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
