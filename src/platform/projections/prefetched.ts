import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { PrefetchedLookup } from '../cache/cache-aside.js';
import type { CacheEntry } from '../cache/cache-store.js';

/**
 * The detail entries a route named in `@Authorize({ prefetch })`, fetched by the guard with the
 * auth context in one round trip. Handed on explicitly: the guard attaches it to the request, the
 * handler takes it with `@PrefetchedEntries()` and passes it to the projection's `detail`.
 */
export class Prefetched implements PrefetchedLookup {
  constructor(private readonly entries: ReadonlyMap<string, CacheEntry | undefined>) {}

  /**
   * The lookup of `key` when the guard found an entry. A miss is read again: the fill another
   * request may have made since is what keeps a stampede to one load.
   */
  lookup(key: string): { readonly ok: true; readonly entry: CacheEntry } | undefined {
    const entry = this.entries.get(key);
    return entry === undefined ? undefined : { ok: true, entry };
  }

  /** The route's one detail entry with its key, when the guard found it (what `detailOf` named). */
  found(): { readonly key: string; readonly entry: CacheEntry } | undefined {
    if (this.entries.size !== 1) return undefined;
    for (const [key, entry] of this.entries) return entry === undefined ? undefined : { key, entry };
    return undefined;
  }
}

const byRequest = new WeakMap<FastifyRequest, Prefetched>();

export function attachPrefetched(request: FastifyRequest, prefetched: Prefetched): void {
  byRequest.set(request, prefetched);
}

/** What the guard fetched for this request's detail read, if anything. */
export function prefetchedOf(request: FastifyRequest): Prefetched | undefined {
  return byRequest.get(request);
}

/** `@PrefetchedEntries() prefetched: Prefetched | undefined` on a detail handler. */
export const PrefetchedEntries = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Prefetched | undefined =>
    prefetchedOf(context.switchToHttp().getRequest<FastifyRequest>()),
);
