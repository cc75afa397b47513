import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { authContextOf, type AuthContext } from './auth-context.js';

/** Route parameter decorator: the authenticated caller (set by the global guard). */
export const Actor = createParamDecorator((_: unknown, context: ExecutionContext): AuthContext => {
  const auth = authContextOf(context.switchToHttp().getRequest<FastifyRequest>());
  if (auth === undefined) throw new Error('@Actor() used on a route the auth guard did not authenticate');
  return auth;
});
