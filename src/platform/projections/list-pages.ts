import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { cacheKeys } from '../cache/cache-keys.js';
import type { CacheEntry } from '../cache/cache-store.js';
import type { CacheEntries } from '../cache/cache-entries.js';
import type { TableGenerations } from '../cache/table-generations.js';
import { parseListQuery } from '../http/list/list-query.parser.js';
import { nextChangeOf, runList, totalKey } from '../http/list/list-runner.js';
import type { Scope } from '../http/list/list-sql.js';
import type { ListQuery, ListSpec } from '../http/list/list-spec.js';
import { ListResponse, RawJson } from '../http/responses.js';
import { ListTotals } from './list-totals.js';
import { Projections } from './projections.js';

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

/** A page that its route computes itself (the access lists), cached like any other. */
export interface ComputedPage<Item> {
  readonly items: readonly Item[];
  readonly total: number;
  readonly total_exact: boolean;
  /** Epoch ms at which the clock alone changes the page (an expiry), judged before the page was read. */
  readonly changesAt?: number;
  readonly meta?: Readonly<Record<string, unknown>>;
}

type Present = (rows: readonly unknown[]) => unknown[];

/** One page to load: what it is, how its rows are presented, and the generations it was asked under. */
interface PageLoad {
  readonly pageDigest: string;
  readonly spec: ListSpec;
  readonly query: ListQuery;
  readonly scope: Scope | undefined;
  readonly present: Present | undefined;
  readonly generations: readonly number[] | undefined;
  /** The generations its total may be remembered under (also with LIST_CACHE off), if known. */
  readonly totalsUnder: readonly number[] | undefined;
}

const sameGenerations = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((value, index) => value === b[index]);

/**
 * List pages through the cache (parts 2 and 7). A page is keyed by its resource, its normalised
 * query and the row scope the actor's authorization gave it, and stored with the generations of
 * the tables it was read from, taken before the database read. A write bumps its tables'
 * generations after its commit and before its response, so once that response is sent every page
 * built earlier mismatches and is reloaded: no key scan, no stale page. Pages whose rows are judged
 * at `now()` also carry the next expiry in the table and are reloaded when it passes.
 */
@Injectable()
export class ListPages {
  private readonly inflight = new Map<string, Promise<ListResponse<unknown>>>();
  private readonly totals = new ListTotals();

  private readonly entries: CacheEntries;
  private readonly generations: TableGenerations;

  constructor(private readonly projections: Projections) {
    this.entries = projections.entries;
    this.generations = projections.generations;
  }

  /** A page of the list route: the raw query parsed against the spec (every problem a 400). */
  async read<Row, Item = Row>(
    spec: ListSpec,
    rawQuery: Record<string, unknown>,
    scope?: Scope,
    present?: (rows: readonly Row[]) => Item[],
  ): Promise<ListResponse<Item>> {
    const query = parseListQuery(spec, rawQuery);
    const pageDigest = digest(spec, query, scope);
    const lookup = await this.lookup(pageDigest, spec.tables, query);
    if (lookup.hit !== undefined) return lookup.hit as ListResponse<Item>;
    const page = await this.loadOnce({
      pageDigest,
      spec,
      query,
      scope,
      present: present as Present | undefined,
      generations: lookup.ok ? lookup.generations : undefined,
      // Pages not cached (LIST_CACHE off): their totals still are, under the tables' generations.
      totalsUnder: lookup.ok
        ? lookup.generations
        : this.generations.listPages
          ? undefined
          : await this.generations.current(spec.tables),
    });
    return new ListResponse(
      page.items as Item[],
      page.page,
      page.page_size,
      page.total,
      page.total_exact,
      lookup.ok ? 'miss' : 'bypass',
    );
  }

  /**
   * A page its route computes (not from a `ListSpec`), through the cache all the same: keyed by
   * `identity` (everything that decides the page), good while none of `tables` was written and
   * its `changesAt` has not passed. `load` is told whether its page will be stored (else it need
   * not work out `changesAt`).
   */
  async readComputed<Item>(
    identity: { readonly page: number; readonly page_size: number; readonly [key: string]: unknown },
    tables: readonly string[],
    load: (caching: boolean) => Promise<ComputedPage<Item>>,
  ): Promise<ListResponse<Item>> {
    const pageDigest = createHash('sha1')
      .update(JSON.stringify(['computed', identity]))
      .digest('base64url');
    const lookup = await this.lookup(pageDigest, tables, identity);
    if (lookup.hit !== undefined) return lookup.hit as ListResponse<Item>;
    this.entries.stats.loads += 1;
    const page = await load(lookup.ok);
    const result = new ListResponse<Item>(
      page.items,
      identity.page,
      identity.page_size,
      page.total,
      page.total_exact,
      lookup.ok ? 'miss' : 'bypass',
      page.meta,
    );
    if (lookup.ok)
      await this.entries.put(
        cacheKeys.listPage(pageDigest),
        encodePage(pageDigest, result, lookup.generations, page.changesAt),
        false,
      );
    return result;
  }

  /** The cached page if it is good (a hit), else the tables' generations to load under (`ok`: the cache answered). */
  private async lookup(
    pageDigest: string,
    tables: readonly string[],
    query: Pick<ListQuery, 'page' | 'page_size'>,
  ): Promise<{ ok: boolean; generations: number[]; hit?: ListResponse<unknown> }> {
    const key = cacheKeys.listPage(pageDigest);
    const lookup = await this.generations.pageWith(key, tables);
    if (!lookup.ok) return lookup;
    const cached =
      lookup.entry === undefined ? 'absent' : decodePage(lookup.entry, pageDigest, lookup.generations, query);
    if (cached instanceof ListResponse) {
      this.entries.stats.hits += 1;
      return { ...lookup, hit: cached };
    }
    this.entries.stats.misses += 1;
    // Not a page at all (its version may be anything, which would refuse every fill): removed.
    if (cached === 'unreadable' && lookup.entry !== undefined) await this.entries.dropUnreadable(key, lookup.entry);
    return lookup;
  }

  /**
   * Concurrent misses of one page share a single database read (per instance), but only misses
   * that saw the same table generations: a read that starts after a write's response sees the
   * bumped generation and must not join a load that began before that write committed. Without
   * generations (the cache could not be asked, or LIST_CACHE is off) every read loads alone.
   */
  private loadOnce(load: PageLoad): Promise<ListResponse<unknown>> {
    if (load.generations === undefined) return this.load(load);
    const flight = `${load.pageDigest}@${load.generations.join('.')}`;
    const running = this.inflight.get(flight);
    if (running !== undefined) return running;
    const loading = this.load(load).finally(() => this.inflight.delete(flight));
    this.inflight.set(flight, loading);
    return loading;
  }

  private async load({
    pageDigest,
    spec,
    query,
    scope,
    present,
    generations,
    totalsUnder,
  }: PageLoad): Promise<ListResponse<unknown>> {
    this.entries.stats.loads += 1;
    const counting = totalsUnder === undefined ? undefined : totalKey(spec, query, scope);
    const known =
      counting === undefined || totalsUnder === undefined ? undefined : this.totals.get(counting, totalsUnder);
    // The next expiry first: judged no later than the page, it can only be early (a reload too
    // soon), never late (an expired row shown as live).
    const { changesAt, page } = await this.projections.load(async (db) => ({
      changesAt: generations === undefined && totalsUnder === undefined ? undefined : await nextChangeOf(db, spec),
      page: await runList<unknown>(db, spec, query, scope, known),
    }));
    if (counting !== undefined && totalsUnder !== undefined && known === undefined)
      this.totals.remember(counting, totalsUnder, { value: page.total, exact: page.total_exact }, changesAt);
    const items = present === undefined ? page.items : present(page.items as readonly unknown[]);
    const result = new ListResponse<unknown>(items, page.page, page.page_size, page.total, page.total_exact);
    if (generations !== undefined)
      await this.entries.put(
        cacheKeys.listPage(pageDigest),
        encodePage(pageDigest, result, generations, changesAt),
        false,
      );
    return result;
  }
}

function digest(spec: ListSpec, query: ListQuery, scope: Scope | undefined): string {
  return createHash('sha1')
    .update(JSON.stringify([spec.from, spec.select, query, scope?.where ?? null, scope?.params ?? null]))
    .digest('base64url');
}

function rowsDigest(rows: string): string {
  return createHash('sha1').update(rows).digest('base64url');
}

/** The header line, then the rows as JSON: a hit splices the rows into the response unparsed. */
function encodePage(
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

/** The cached page if it is still good; `stale` when a table was written or an expiry passed since. */
function decodePage(
  entry: CacheEntry,
  pageDigest: string,
  generations: readonly number[],
  query: Pick<ListQuery, 'page' | 'page_size'>,
): ListResponse<unknown> | 'stale' | 'unreadable' {
  if (entry.json === '') return 'stale'; // a tombstone left by a triggered rebuild
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
