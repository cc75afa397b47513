import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error.js';
import { IS_PUBLIC } from '../http/public.decorator.js';
import { currentRequest } from '../http/request-context.js';
import { attachAuthContext, type AuthContext } from './auth-context.js';
import { DeviceLocators } from './device-locators.js';
import { AuthFailureLimiter } from './auth-failure-limiter.js';
import { AuthorizationService, permissionDenied } from './authorization.service.js';
import { AUTHORIZE, type AuthorizeOptions } from './authorize.decorator.js';
import { ActorRateLimiter } from './actor-rate-limiter.js';
import { AuthContextService } from './auth-context.service.js';
import { TokenVerifier } from './token-verifier.js';
import { attachPrefetched } from '../projections/prefetched.js';

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
    private readonly devices: DeviceLocators,
    private readonly authorization: AuthorizationService,
    private readonly limiter: AuthFailureLimiter,
    private readonly tokens: TokenVerifier,
    private readonly contexts: AuthContextService,
    private readonly rateLimiter: ActorRateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, targets) === true) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const rule = this.reflector.get<AuthorizeOptions | undefined>(AUTHORIZE, context.getHandler());
    const requestContext = currentRequest();
    const prefetch = rule?.prefetch?.(request);
    const auth = await this.authenticateLimited(request, prefetch === undefined ? [] : [prefetch]);
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
    await this.authorization.assertAllowed(auth, rule.permission, await this.devices.locate(request, rule.device));
    return true;
  }

  private async authenticateLimited(request: FastifyRequest, prefetch: readonly string[]): Promise<AuthContext> {
    this.limiter.assertAllowed(request.ip);
    try {
      return await this.authenticate(request, prefetch);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401)
        throw (await this.limiter.recordFailure(request.ip)) ?? error;
      throw error;
    }
  }

  /**
   * Layer 1: the token (`TokenVerifier`), then its session and user, then the actor's rate limit.
   * The route's detail projection is fetched in the same round trip and attached to the request
   * for its handler (`@PrefetchedEntries()`): a cached detail read costs one Redis call.
   */
  private async authenticate(request: FastifyRequest, prefetch: readonly string[]): Promise<AuthContext> {
    const token = await this.tokens.verify(request.headers.authorization);
    const { context, prefetched } = await this.contexts.resolveWith(token.user_id, token.session_id, prefetch);
    if (prefetched !== undefined) attachPrefetched(request, prefetched);
    const limited = this.rateLimiter.hit(token.user_id);
    if (limited !== undefined) throw limited;
    return context;
  }
}
