import type { FastifyRequest } from 'fastify';
import type { CacheEntry } from '../cache/cache-store.js';
import { objectOf } from '../cache/decode.js';
import { Recent } from '../cache/recent.js';
import type { ListSpec } from '../http/list/list-spec.js';
import { listMeta, resourceEnvelope } from '../http/envelope.js';
import { RawJson } from '../http/responses.js';
import type { ListPages } from './list-pages.js';
import { DETAIL_SHAPE } from './resource-table.js';
import { prefetchedOf, type Prefetched } from './prefetched.js';
import { cachedReadOf } from './cached-read.decorator.js';
import { routeConfigPart } from '../http/route-parts.js';
import { LIST_ROUTE_CONFIG } from '../http/openapi/describe.decorator.js';

/**
 * The one cached answer of a read route marked `@CachedRead({ answerStored: true })`, as stored:
 * a detail from the entry prefetched with the auth context, a list page from its stored page.
 * `allowed` is the caller's decision that the actor may read it without the route (it knows the
 * actor; this layer does not); undefined sends the request on through the route.
 */
export async function storedAnswer(
  request: FastifyRequest,
  pages: ListPages,
  allowed: (reads: 'detail' | 'page') => Promise<boolean>,
): Promise<StoredBody | undefined> {
  if (request.method !== 'GET' || cachedReadOf(request)?.answerStored !== true) return undefined;
  const list = routeConfigPart<ListSpec>(request, LIST_ROUTE_CONFIG);
  if (list === undefined) {
    const stored = storedDetail(request, prefetchedOf(request));
    return stored !== undefined && (await allowed('detail')) ? stored : undefined;
  }
  return (await allowed('page')) ? storedPage(request, list, pages) : undefined;
}

/** The JSON last found good per key: a hot record is checked once, not on every read. */
const checked = new Recent<string, string>(4096);
/** The route's own check of a detail projection (`ResourceTable`). */
const DECODE_DETAIL = objectOf<{ id: number }>(DETAIL_SHAPE);

/** A cached answer as stored: the envelope's bytes and, for a detail, its ETag version. */
export interface StoredBody {
  readonly body: string;
  readonly version?: number;
}

/**
 * A detail route whose handler sends its prefetched projection as stored (`detailAsStored`)
 * answers a hit from the authentication hook, before Nest's pipeline (guard, interceptor, pipes,
 * handler): the same bytes and headers that pipeline sends for a hit (`resourceEnvelope`), for
 * about a sixth less CPU per read. Only the plain case: an entry of a live record that reads back
 * as the record it names, and no query string. Everything else (a miss, a deleted record,
 * `include_deleted`) goes through the route. The caller has already decided that the actor may
 * read it: this layer knows no actor.
 */
export function storedDetail(request: FastifyRequest, prefetched: Prefetched | undefined): StoredBody | undefined {
  if (request.url.includes('?')) return undefined;
  // The entry the authentication's round trip fetched for this route, under the key it named.
  const found = prefetched?.found();
  if (found === undefined || found.entry.deleted || !readsBack(found.key, found.entry)) return undefined;
  return {
    body: resourceEnvelope(found.entry.json, { request_id: request.id, cache: 'hit' }),
    version: found.entry.version,
  };
}

/**
 * What the route's cache-aside read checks before it sends an entry: JSON of an object whose
 * `id` is the record the key names. A tombstone or anything else is left to the route.
 */
function readsBack(key: string, entry: CacheEntry): boolean {
  if (entry.json === '') return false;
  if (checked.get(key) === entry.json) return true;
  const value = DECODE_DETAIL(entry.json);
  if (value === undefined || value.id !== Number(key.slice(key.lastIndexOf(':') + 1))) return false;
  checked.set(key, entry.json);
  return true;
}

/**
 * A list route whose handler reads its pages through `ListPages` with no row scope for an actor
 * allowed everywhere (`pageAsStored`) answers a page the cache holds good from the authentication
 * hook, as stored, with the `meta` the route sends for a hit. Anything else (a miss, a stale page,
 * a bad query) goes through the route; the caller has decided that no row scope applies.
 */
export async function storedPage(
  request: FastifyRequest,
  list: ListSpec,
  pages: ListPages,
): Promise<StoredBody | undefined> {
  const page = await pages.hit(list, request.query as Record<string, unknown>);
  if (page === undefined || !(page.items instanceof RawJson)) return undefined;
  return { body: resourceEnvelope(page.items.json, listMeta(request.id, page)) };
}
