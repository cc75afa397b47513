import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { cacheKeys } from '../cache/cache-keys.js';
import type { CacheEntries } from '../cache/cache-entries.js';
import type { TableGenerations } from '../cache/table-generations.js';
import { parseListQuery } from '../http/list/list-query.parser.js';
import { nextChangeOf, runList, totalKey } from '../http/list/list-runner.js';
import type { Scope } from '../http/list/list-sql.js';
import type { ListQuery, ListSpec } from '../http/list/list-spec.js';
import { ListResponse } from '../http/responses.js';
import { decodePage, digest, encodePage } from './list-page-entries.js';
import { ListTotals, type ListTotal } from './list-totals.js';
import { Projections } from './projections.js';

/** A page that its route computes itself (the access lists), cached like any other. */
export interface ComputedPage<Item> {
  readonly items: readonly Item[];
  readonly total: number;
  readonly total_exact: boolean;
  /** Epoch ms at which the clock alone changes the page (an expiry), judged before the page was read. */
  readonly changesAt?: number;
  readonly meta?: Readonly<Record<string, unknown>>;
}

/**
 * What a computed page's load is told of its total: the one remembered (it need not count), and
 * whether the total it counts will be remembered (then its `changesAt` bounds how long).
 */
export interface ComputedTotal {
  readonly known: ListTotal | undefined;
  readonly remembered: boolean;
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

  /**
   * The page of a query without a row scope if the cache holds it good now (a hit, counted), else
   * undefined, counting nothing: the route then reads it as usual (a bad query is its 400).
   */
  async hit(spec: ListSpec, rawQuery: Record<string, unknown>): Promise<ListResponse<unknown> | undefined> {
    let query: ListQuery;
    try {
      query = parseListQuery(spec, rawQuery);
    } catch {
      return undefined;
    }
    return (await this.lookup(digest(spec, query, undefined), spec.tables, query, { countMiss: false })).hit;
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
      // Pages not cached (LIST_CACHE off): their totals still are, under the tables' generations
      // and the flush generation (a flush of the whole cache, after a lost write, forgets them too).
      totalsUnder: await this.totalsUnder(lookup, spec.tables),
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
   * not work out `changesAt`). With `totalOf` (everything that decides the total: the identity
   * without the page), the total is remembered like a list's (`ListTotals`, also with LIST_CACHE
   * off) and handed to the next load of any page of it, which then need not count.
   */
  async readComputed<Item>(
    identity: { readonly page: number; readonly page_size: number; readonly [key: string]: unknown },
    tables: readonly string[],
    load: (caching: boolean, total: ComputedTotal) => Promise<ComputedPage<Item>>,
    totalOf?: Readonly<Record<string, unknown>>,
  ): Promise<ListResponse<Item>> {
    const pageDigest = createHash('sha1')
      .update(JSON.stringify(['computed', identity]))
      .digest('base64url');
    const lookup = await this.lookup(pageDigest, tables, identity);
    if (lookup.hit !== undefined) return lookup.hit as ListResponse<Item>;
    this.entries.stats.loads += 1;
    const counting = totalOf === undefined ? undefined : JSON.stringify(['computed', totalOf]);
    const totalsUnder = counting === undefined ? undefined : await this.totalsUnder(lookup, tables);
    const known =
      counting === undefined || totalsUnder === undefined ? undefined : this.totals.get(counting, totalsUnder);
    const page = await load(lookup.ok, { known, remembered: totalsUnder !== undefined });
    if (counting !== undefined && totalsUnder !== undefined && known === undefined)
      this.totals.remember(counting, totalsUnder, { value: page.total, exact: page.total_exact }, page.changesAt);
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

  /**
   * The generations a total counted now may be remembered under, read before it is counted: the
   * tables' and the flush generation from the lookup, or (LIST_CACHE off) the tables' alone.
   */
  private async totalsUnder(
    lookup: { ok: boolean; generations: number[]; flushes?: number },
    tables: readonly string[],
  ): Promise<readonly number[] | undefined> {
    if (lookup.ok) return lookup.flushes === undefined ? undefined : [...lookup.generations, lookup.flushes];
    return this.generations.listPages ? undefined : await this.generations.current(tables);
  }

  /** The cached page if it is good (a hit), else the tables' generations to load under (`ok`: the cache answered). */
  private async lookup(
    pageDigest: string,
    tables: readonly string[],
    query: Pick<ListQuery, 'page' | 'page_size'>,
    // A caller that hands a miss on to the route (the hook) leaves counting it to the route.
    { countMiss = true } = {},
  ): Promise<{ ok: boolean; generations: number[]; flushes?: number; hit?: ListResponse<unknown> }> {
    const key = cacheKeys.listPage(pageDigest);
    const lookup = await this.generations.pageWith(key, tables);
    if (!lookup.ok) return lookup;
    const cached =
      lookup.entry === undefined ? 'absent' : decodePage(lookup.entry, pageDigest, lookup.generations, query);
    if (cached instanceof ListResponse) {
      this.entries.stats.hits += 1;
      return { ...lookup, hit: cached };
    }
    if (countMiss) this.entries.stats.misses += 1;
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
