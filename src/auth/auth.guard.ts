import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import passport from 'passport';
import { ApiError } from '../common/api-error.js';
import { IS_PUBLIC } from '../common/public.decorator.js';
import { currentRequest } from '../common/request-context.js';
import { attachAuthContext, type AuthContext } from './auth-context.js';
import { AuthFailureLimiter } from './auth-failure-limiter.js';
import { AuthorizationService, permissionDenied } from './authorization.service.js';
import { AUTHORIZE, type AuthorizeOptions } from './authorize.decorator.js';
import { JwtStrategy } from './jwt.strategy.js';

/** The contract's 401 for what passport-jwt reports when it refuses a token. */
function tokenError(info: unknown): ApiError {
  if (info instanceof ApiError) return info;
  const name = info instanceof Error ? info.name : undefined;
  const message = info instanceof Error ? info.message : String(info);
  if (message === 'No auth token')
    return new ApiError('AUTH_TOKEN_MISSING', 'A bearer token is required in the Authorization header');
  if (name === 'TokenExpiredError') return new ApiError('AUTH_TOKEN_EXPIRED', 'The token has expired; get a new one');
  return new ApiError('AUTH_TOKEN_INVALID', 'The token is not valid', { reason: message });
}

/**
 * The global guard, deny by default (part 5): public routes pass; every other route needs a
 * valid token and session (layer 1), a role with admin access (layer 2) and the permission its
 * `@Authorize` declares (layer 3, through the evaluator). A route that declares nothing is
 * refused even for a super admin.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly passport = new passport.Passport();

  constructor(
    private readonly reflector: Reflector,
    private readonly modules: ModuleRef,
    private readonly authorization: AuthorizationService,
    private readonly limiter: AuthFailureLimiter,
    strategy: JwtStrategy,
  ) {
    this.passport.use('jwt', strategy);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, targets) === true) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const auth = await this.authenticateLimited(request, http.getResponse<FastifyReply>());
    attachAuthContext(request, auth);
    const requestContext = currentRequest();
    if (requestContext !== undefined) requestContext.actor_id = auth.user_id;

    if (!this.authorization.hasAdminAccess(auth)) {
      throw new ApiError('ROLE_FORBIDDEN', `The role ${auth.role.code} has no access to the admin API`, {
        role_id: auth.role.id,
      });
    }
    const rule = this.reflector.get<AuthorizeOptions | undefined>(AUTHORIZE, context.getHandler());
    if (rule === undefined)
      throw new ApiError('PERMISSION_DENIED', 'This route declares no permission and is closed', { permission: null });
    if (rule.check === 'service' || this.authorization.decideGlobally(auth, rule.permission).allowed) return true;
    // Only now find the device (a cached read): callers allowed everywhere never pay for it.
    if (rule.device === undefined) throw permissionDenied(rule.permission);
    await this.authorization.assertAllowed(auth, rule.permission, await rule.device(request, this.modules));
    return true;
  }

  private async authenticateLimited(request: FastifyRequest, reply: FastifyReply): Promise<AuthContext> {
    this.limiter.assertAllowed(request.ip);
    try {
      return await this.authenticate(request, reply);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401)
        throw (await this.limiter.recordFailure(request.ip)) ?? error;
      throw error;
    }
  }

  private authenticate(request: FastifyRequest, reply: FastifyReply): Promise<AuthContext> {
    return new Promise((resolve, reject) => {
      const middleware = this.passport.authenticate(
        'jwt',
        { session: false },
        (error: unknown, user: AuthContext | false, info: unknown) => {
          if (error !== null && error !== undefined)
            reject(error instanceof Error ? error : new Error('authentication failed with a non-error value'));
          else if (user === false) reject(tokenError(info));
          else resolve(user);
        },
      ) as (req: unknown, res: unknown, next: (error?: unknown) => void) => void;
      middleware(request, reply, (error?: unknown) =>
        reject(error instanceof Error ? error : new Error('authentication ended without a decision')),
      );
    });
  }
}
