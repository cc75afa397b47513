import { createHash } from 'node:crypto';
import type { CacheEntry } from '../cache/cache-store.js';
import { Recent } from '../cache/recent.js';
import type { Scope } from '../http/list/list-sql.js';
import type { ListQuery, ListSpec } from '../http/list/list-spec.js';
import { ListResponse, RawJson } from '../http/responses.js';

// How a list page is stored in the cache and read back (`ListPages`).

/** What a cached page remembers besides its rows: what it was built under and its totals. */
interface PageHeader {
  /** The page's own digest: another page's entry found under this key is unreadable, not a hit. */
  readonly k: string;
  /** A digest of the rows as stored: a page altered in the store is unreadable, never sent. */
  readonly h: string;
  /** The generations of `spec.tables` read before the page was loaded. */
  readonly g: readonly number[];
  /** Epoch ms after which the clock alone changes the page (an expiry), or null. */
  readonly u: number | null;
  readonly total: number;
  readonly exact: boolean;
  /** More `meta` of a computed list, or absent. */
  readonly m?: Readonly<Record<string, unknown>>;
}

const sameGenerations = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((value, index) => value === b[index]);

/** Page digests already computed, per spec, by query and scope: a repeated page is not hashed again. */
const digests = new WeakMap<ListSpec, Recent<string, string>>();
const DIGESTS_PER_SPEC = 1024;

/** A page's identity: its spec (table and columns), normalised query and row scope. */
export function digest(spec: ListSpec, query: ListQuery, scope: Scope | undefined): string {
  const asked = JSON.stringify([query, scope?.where ?? null, scope?.params ?? null]);
  const known = digests.get(spec) ?? new Recent<string, string>(DIGESTS_PER_SPEC);
  digests.set(spec, known);
  const found = known.get(asked);
  if (found !== undefined) return found;
  const computed = createHash('sha1')
    .update(JSON.stringify([spec.from, spec.select, query, scope?.where ?? null, scope?.params ?? null]))
    .digest('base64url');
  known.set(asked, computed);
  return computed;
}

function rowsDigest(rows: string): string {
  return createHash('sha1').update(rows).digest('base64url');
}

/** The header line, then the rows as JSON: a hit splices the rows into the response unparsed. */
export function encodePage(
  pageDigest: string,
  page: ListResponse<unknown>,
  generations: readonly number[],
  changesAt: number | undefined,
): CacheEntry {
  const rows = JSON.stringify(page.items);
  const header: PageHeader = {
    k: pageDigest,
    h: rowsDigest(rows),
    g: generations,
    u: changesAt ?? null,
    total: page.total,
    exact: page.total_exact,
    ...(page.meta === undefined ? {} : { m: page.meta }),
  };
  return {
    // Generations only grow: a page built under newer ones is never replaced by an older fill. (A
    // generation starts from the clock in microseconds: four of them sum below 2^53; the header's
    // `g` decides whether a page is good, this only orders fills.)
    version: generations.reduce((sum, value) => sum + value, 0),
    deleted: false,
    json: `${JSON.stringify(header)}\n${rows}`,
  };
}

/** Headers of pages already checked, by page, with the JSON they were read from (a hot page is checked once). */
const checkedPages = new Map<string, { readonly json: string; readonly header: PageHeader; readonly rows: string }>();
/** What the checked pages may hold in all (their JSON, counted in UTF-16 code units): 4 MB. */
const CHECKED_PAGES_BUDGET = 2 * 1024 * 1024;
let checkedLength = 0;

/** The header and rows of a stored page, if it is one (the digest of its rows included): else `unreadable`. */
function readPage(entry: CacheEntry, pageDigest: string): { header: PageHeader; rows: string } | 'unreadable' {
  const known = checkedPages.get(pageDigest);
  if (known !== undefined && known.json === entry.json) return known;
  const newline = entry.json.indexOf('\n');
  if (newline < 0) return 'unreadable';
  let header: Partial<PageHeader>;
  try {
    header = JSON.parse(entry.json.slice(0, newline)) as Partial<PageHeader>;
  } catch {
    return 'unreadable';
  }
  const rows = entry.json.slice(newline + 1);
  if (
    header.k !== pageDigest ||
    header.h !== rowsDigest(rows) ||
    !Array.isArray(header.g) ||
    typeof header.total !== 'number' ||
    typeof header.exact !== 'boolean' ||
    (header.u !== null && typeof header.u !== 'number') ||
    (header.m !== undefined && (typeof header.m !== 'object' || header.m === null)) ||
    !rows.startsWith('[') ||
    !rows.endsWith(']')
  )
    return 'unreadable';
  const page = { json: entry.json, header: header as PageHeader, rows };
  remember(pageDigest, page);
  return page;
}

/** The cached page if it is still good; `stale` when a table was written or an expiry passed since. */
export function decodePage(
  entry: CacheEntry,
  pageDigest: string,
  generations: readonly number[],
  query: Pick<ListQuery, 'page' | 'page_size'>,
): ListResponse<unknown> | 'stale' | 'unreadable' {
  if (entry.json === '') return 'stale'; // a tombstone left by a triggered rebuild
  const page = readPage(entry, pageDigest);
  if (page === 'unreadable') return page;
  const { header, rows } = page;
  if (!sameGenerations(header.g, generations)) return 'stale';
  if (typeof header.u === 'number' && Date.now() >= header.u) return 'stale';
  return new ListResponse<unknown>(
    new RawJson(rows),
    query.page,
    query.page_size,
    header.total,
    header.exact,
    'hit',
    header.m,
  );
}

/** Keeps a checked page, dropping the oldest ones past the budget (a page larger than it is not kept). */
function remember(
  pageDigest: string,
  page: { readonly json: string; readonly header: PageHeader; readonly rows: string },
): void {
  if (page.json.length > CHECKED_PAGES_BUDGET) return;
  const previous = checkedPages.get(pageDigest);
  if (previous !== undefined) {
    checkedPages.delete(pageDigest);
    checkedLength -= previous.json.length;
  }
  for (const [oldest, kept] of checkedPages) {
    if (checkedLength + page.json.length <= CHECKED_PAGES_BUDGET) break;
    checkedPages.delete(oldest);
    checkedLength -= kept.json.length;
  }
  checkedPages.set(pageDigest, page);
  checkedLength += page.json.length;
}
