import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { ApiParam } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { documentIfMatch, parseIfMatch, type IfMatch } from '../http/etag.js';
import { pathId } from '../http/id.pipe.js';
import { authContextOf, type AuthContext } from './auth-context.js';

/** A write on the record at `/{id}`: who asks, which record, and the version `If-Match` expects. */
export interface RecordWrite {
  readonly actor: AuthContext;
  readonly id: number;
  readonly ifMatch: IfMatch;
}

/**
 * Route parameter decorator for every write addressed to `/{id}`, so the three always travel
 * together: `update(@Write() { actor, id, ifMatch }: RecordWrite, @Body() dto: …)`. The id is
 * parsed strictly (400 naming it) and documented as the path parameter it is.
 */
export const Write = createParamDecorator(
  (_: unknown, context: ExecutionContext): RecordWrite => {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const actor = authContextOf(request);
    if (actor === undefined) throw new Error('@Write() used on a route the auth guard did not authenticate');
    return { actor, id: pathId(request, 'id'), ifMatch: parseIfMatch(request.headers['if-match']) };
  },
  [
    (target: object, key: string | symbol | undefined): void => {
      if (key === undefined) return;
      const descriptor = Object.getOwnPropertyDescriptor(target, key);
      if (descriptor !== undefined) ApiParam({ name: 'id', type: Number, required: true })(target, key, descriptor);
    },
    documentIfMatch,
  ],
);
