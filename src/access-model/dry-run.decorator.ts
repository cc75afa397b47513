import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../platform/http/api-error.js';
import { globalDecision } from './access-rules.js';
import { authContextOf } from '../platform/auth/auth-context.js';
import { permissionDenied } from '../platform/auth/access-evaluator.js';

/**
 * `@DryRun() dryRun: boolean` on a write that can be previewed (part 6.17): `dry_run` is true or
 * false, and any other query parameter is a 400 (part 1), so a misspelt `DRY_RUN=true` can never
 * be taken for a write. `DryRun('access.read')` on a write about a user (its role, standing or
 * grants): its preview lists the user's rights on every device it has an authority on, which is
 * an access question (part 6.13), so it also needs `access.read` by role or grant.
 */
export const DryRun = createParamDecorator((needs: 'access.read' | undefined, context: ExecutionContext): boolean => {
  const request = context.switchToHttp().getRequest<FastifyRequest>();
  const query = request.query as Record<string, unknown>;
  let dryRun = false;
  for (const [name, value] of Object.entries(query)) {
    if (name !== 'dry_run') throw ApiError.field(name, 'unknown', `${name} is not a parameter of this route`);
    if (value !== 'true' && value !== 'false') throw ApiError.field(name, 'in', 'dry_run must be true or false');
    dryRun = value === 'true';
  }
  const actor = authContextOf(request);
  if (dryRun && needs !== undefined && (actor === undefined || !globalDecision(actor, needs, Date.now()).allowed))
    throw permissionDenied(needs);
  return dryRun;
});
