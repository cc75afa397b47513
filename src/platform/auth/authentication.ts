import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error.js';
import { attachPrefetched } from '../projections/prefetched.js';
import { ListPages } from '../projections/list-pages.js';
import { Projections } from '../projections/projections.js';
import type { StoredAnswer } from '../http/http.js';
import { storedAnswer } from '../projections/stored-answers.js';
import { DeviceLocators } from './device-locators.js';
import { ActorRateLimiter } from './actor-rate-limiter.js';
import { attachAuthContext, type AuthContext } from './auth-context.js';
import { AuthFailureLimiter } from './auth-failure-limiter.js';
import { AccessEvaluator } from './access-evaluator.js';
import { routeAccessOf, type RouteAccess } from './authorize.decorator.js';
import { cachedReadOf } from '../projections/cached-read.decorator.js';
import { TokenVerifier } from './token-verifier.js';

/**
 * Layer 1 of part 5: the token (`TokenVerifier`), its session and user, the actor's rate limit,
 * and the per-address limit on failed authentication (part 10), which refuses only requests that
 * fail: a valid token from a blocked address is served (an office behind one NAT).
 */
@Injectable()
export class Authentication {
  constructor(
    private readonly limiter: AuthFailureLimiter,
    private readonly tokens: TokenVerifier,
    private readonly rateLimiter: ActorRateLimiter,
    private readonly access: AccessEvaluator,
    private readonly devices: DeviceLocators,
    private readonly pages: ListPages,
    private readonly projections: Projections,
  ) {}

  /**
   * Fastify's `onRequest` for a route that declares a permission: authenticates before the body
   * is read (part 4), so an unauthenticated or blocked request with a large body is answered at
   * once. The guard then finds the context on the request.
   */
  async admit(request: FastifyRequest): Promise<StoredAnswer | undefined> {
    const rule = routeAccessOf(request);
    if (rule === undefined) return undefined;
    const context = await this.authenticate(request);
    attachAuthContext(request, context);
    if (!this.access.hasAdminAccess(context)) return undefined;
    // The route's cached answer, when it is one to send as stored and this actor may read it here:
    // a page only when its rows are not filtered for the actor (allowed everywhere).
    const stored = await storedAnswer(request, { pages: this.pages, projections: this.projections }, (reads) =>
      reads === 'detail'
        ? this.mayReadDetail(request, rule, context)
        : Promise.resolve(this.access.admitGlobally(context, rule.permission).allowed),
    );
    return stored === undefined ? undefined : { ...stored, actorId: context.user_id };
  }

  /**
   * Whether the actor may read the stored detail without the route: allowed everywhere (role or
   * grant), or on the record's device by an authority its context carries (the device found from
   * the prefetched entry, no round trip). Anything else, errors included, is left to the guard.
   */
  private async mayReadDetail(request: FastifyRequest, rule: RouteAccess, context: AuthContext): Promise<boolean> {
    if (this.access.admitGlobally(context, rule.permission).allowed) return true;
    if (rule.device === undefined || rule.check === 'service') return false;
    try {
      const device = await this.devices.locate(request, rule.device);
      return this.access.admitFromContext(context, rule.permission, device);
    } catch {
      return false;
    }
  }

  /**
   * The route's detail projection (`@CachedRead({ prefetch })`) is fetched with the session and
   * user in one round trip and attached for its handler (`@PrefetchedEntries()`): a cached detail
   * read costs one call.
   */
  async authenticate(request: FastifyRequest): Promise<AuthContext> {
    try {
      const token = await this.tokens.verify(request.headers.authorization);
      const prefetch = cachedReadOf(request)?.prefetch?.(request);
      const { context, prefetched } = await this.access.resolveWith(
        token.user_id,
        token.session_id,
        prefetch === undefined ? [] : [prefetch],
      );
      if (prefetched !== undefined) attachPrefetched(request, prefetched);
      const limited = this.rateLimiter.hit(token.user_id);
      if (limited !== undefined) throw limited;
      return context;
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 401) throw error;
      // A blocked address's failures are not counted again: no round trip for a flood.
      throw this.limiter.refusalFor(request.ip) ?? (await this.limiter.recordFailure(request.ip)) ?? error;
    }
  }
}
