import type { FastifyRequest } from 'fastify';
import { addRouteConfig, routeConfigPart } from '../http/route-parts.js';

/** How a read route is cached: apart from its permission and its documentation. */
export interface CachedReadOptions {
  /**
   * The cache key of the detail projection the handler reads, from the raw path: fetched with the
   * auth context in one round trip (a cached detail read costs one), and handed to the handler
   * (`@PrefetchedEntries()`).
   */
  readonly prefetch?: (request: FastifyRequest) => string | undefined;
  /**
   * The route answers a plain hit exactly as stored (its handler sends the projection's bytes), so
   * the hit is answered by `stored-answers.ts` as soon as the caller is authorized, before the handler
   * runs: a detail from its prefetched entry, a list page from its stored page.
   */
  readonly answerStored?: boolean;
}

const CACHED_READ_CONFIG = 'cachedRead';

/**
 * `@CachedRead({ prefetch, answerStored })`: the route's one declaration of its cached answer.
 * The stage that answers it (the authentication hook, or the handler on anything but a plain hit)
 * asks `stored-answers.ts` or the repository's cache-aside read; the route says it once.
 */
export function CachedRead(options: CachedReadOptions): MethodDecorator {
  return addRouteConfig({ [CACHED_READ_CONFIG]: options });
}

/** The route's `@CachedRead`, if it has one. */
export function cachedReadOf(request: FastifyRequest): CachedReadOptions | undefined {
  return routeConfigPart<CachedReadOptions>(request, CACHED_READ_CONFIG);
}
