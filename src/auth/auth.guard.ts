import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error.js';
import { IS_PUBLIC } from '../common/public.decorator.js';
import { currentRequest } from '../common/request-context.js';
import { attachAuthContext, type AuthContext } from './auth-context.js';
import { AuthFailureLimiter } from './auth-failure-limiter.js';
import { AuthorizationService, permissionDenied } from './authorization.service.js';
import { AUTHORIZE, type AuthorizeOptions } from './authorize.decorator.js';
import { JwtStrategy } from './jwt.strategy.js';

/** What passport gives a strategy to report its outcome. */
interface StrategyOutcome {
  success(user: AuthContext): void;
  fail(info: unknown): void;
  error(error: unknown): void;
  pass(): void;
  redirect(url: string): void;
}

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
  constructor(
    private readonly reflector: Reflector,
    private readonly modules: ModuleRef,
    private readonly authorization: AuthorizationService,
    private readonly limiter: AuthFailureLimiter,
    private readonly strategy: JwtStrategy,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, targets) === true) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const rule = this.reflector.get<AuthorizeOptions | undefined>(AUTHORIZE, context.getHandler());
    const requestContext = currentRequest();
    const prefetch = rule?.prefetch?.(request);
    if (prefetch !== undefined && requestContext !== undefined) requestContext.cache_prefetch = { keys: [prefetch] };
    const auth = await this.authenticateLimited(request);
    attachAuthContext(request, auth);
    if (requestContext !== undefined) requestContext.actor_id = auth.user_id;

    if (!this.authorization.hasAdminAccess(auth)) {
      throw new ApiError('ROLE_FORBIDDEN', `The role ${auth.role.code} has no access to the admin API`, {
        role_id: auth.role.id,
      });
    }
    if (rule === undefined)
      throw new ApiError('PERMISSION_DENIED', 'This route declares no permission and is closed', { permission: null });
    if (rule.check === 'service' || this.authorization.decideGlobally(auth, rule.permission).allowed) return true;
    // Only now find the device (a cached read): callers allowed everywhere never pay for it.
    if (rule.device === undefined) throw permissionDenied(rule.permission);
    await this.authorization.assertAllowed(auth, rule.permission, await rule.device(request, this.modules));
    return true;
  }

  private async authenticateLimited(request: FastifyRequest): Promise<AuthContext> {
    this.limiter.assertAllowed(request.ip);
    try {
      return await this.authenticate(request);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401)
        throw (await this.limiter.recordFailure(request.ip)) ?? error;
      throw error;
    }
  }

  /**
   * Runs passport-jwt's strategy the way passport's middleware does (a per-request object over
   * the strategy with success/fail/error) without the middleware's per-request machinery.
   */
  private authenticate(request: FastifyRequest): Promise<AuthContext> {
    return new Promise((resolve, reject) => {
      const attempt = Object.create(this.strategy) as JwtStrategy & StrategyOutcome;
      attempt.success = (user: AuthContext) => resolve(user);
      attempt.fail = (info) => reject(tokenError(info));
      attempt.error = (error) =>
        reject(error instanceof Error ? error : new Error('authentication failed with a non-error value'));
      // passport-jwt never passes or redirects; if a later version did, that is no authentication.
      attempt.pass = () => reject(tokenError('the strategy passed without a decision'));
      attempt.redirect = () => reject(tokenError('the strategy asked for a redirect'));
      attempt.authenticate(request as never, { session: false });
    });
  }
}
