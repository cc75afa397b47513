import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error.js';
import { attachPrefetched, prefetchedOf } from '../projections/prefetched.js';
import { ListPages } from '../projections/list-pages.js';
import type { StoredAnswer } from '../http/http.js';
import { storedDetail, storedPage } from '../projections/stored-answers.js';
import { ActorRateLimiter } from './actor-rate-limiter.js';
import { attachAuthContext, type AuthContext } from './auth-context.js';
import { AuthFailureLimiter } from './auth-failure-limiter.js';
import { AccessEvaluator } from './access-evaluator.js';
import { AUTHORIZE_ROUTE_CONFIG, type AuthorizeOptions } from './authorize.decorator.js';
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
    private readonly pages: ListPages,
  ) {}

  /**
   * Fastify's `onRequest` for a route that declares a permission: authenticates before the body
   * is read (part 4), so an unauthenticated or blocked request with a large body is answered at
   * once. The guard then finds the context on the request.
   */
  async admit(request: FastifyRequest): Promise<StoredAnswer | undefined> {
    const config = request.routeOptions.config as { readonly [AUTHORIZE_ROUTE_CONFIG]?: AuthorizeOptions };
    const rule = config[AUTHORIZE_ROUTE_CONFIG];
    if (rule === undefined) return undefined;
    const context = await this.authenticate(request, rule);
    attachAuthContext(request, context);
    if (request.method !== 'GET' || (rule.detailAsStored !== true && rule.pageAsStored !== true)) return undefined;
    // Only an actor the rules allow everywhere (role or grant) is answered as stored: a decision
    // that needs the device, or a list whose rows are filtered, goes through the route.
    if (!this.access.hasAdminAccess(context) || !this.access.admitGlobally(context, rule.permission).allowed)
      return undefined;
    const stored =
      rule.detailAsStored === true
        ? storedDetail(request, prefetchedOf(request))
        : rule.list === undefined
          ? undefined
          : await storedPage(request, rule.list, this.pages);
    return stored === undefined ? undefined : { ...stored, actorId: context.user_id };
  }

  /**
   * The route's detail projection (`prefetch`) is fetched with the session and user in one round
   * trip and attached for its handler (`@PrefetchedEntries()`): a cached detail read costs one call.
   */
  async authenticate(request: FastifyRequest, rule: AuthorizeOptions | undefined): Promise<AuthContext> {
    try {
      const token = await this.tokens.verify(request.headers.authorization);
      const prefetch = rule?.prefetch?.(request);
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
