import type { FastifyRequest } from 'fastify';
import type { RoleDefinition } from './roles.js';

/** Who is calling: the verified token's session and user, with the user's role (layers 1 and 2). */
export interface AuthContext {
  readonly user_id: number;
  readonly session_id: string;
  readonly role: RoleDefinition;
}

// Kept beside the request rather than on it: no augmentation of Fastify's or passport's types.
const contexts = new WeakMap<FastifyRequest, AuthContext>();

export function attachAuthContext(request: FastifyRequest, context: AuthContext): void {
  contexts.set(request, context);
}

export function authContextOf(request: FastifyRequest): AuthContext | undefined {
  return contexts.get(request);
}
