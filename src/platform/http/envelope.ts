import type { ListResponse } from './responses.js';

/**
 * The success envelope of one resource whose JSON is already serialised (a cached projection):
 * spliced in as text, never parsed and serialised again.
 */
export function resourceEnvelope(json: string, meta: Readonly<Record<string, unknown>>): string {
  return `{"success":true,"data":${json},"meta":${JSON.stringify(meta)}}`;
}

/** The `meta` of a list page (part 2): request id, cache outcome, page, size and total, and a computed list's own. */
export function listMeta(requestId: string, result: ListResponse<unknown>): Record<string, unknown> {
  const meta: Record<string, unknown> = { request_id: requestId };
  if (result.cache !== undefined) meta.cache = result.cache;
  return Object.assign(meta, {
    page: result.page,
    page_size: result.page_size,
    total: result.total,
    total_exact: result.total_exact,
    ...result.meta,
  });
}
