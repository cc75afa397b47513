import type { FastifyRequest } from 'fastify';
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
