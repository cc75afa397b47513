import type { CacheOutcome } from '../http/responses.js';
import type { CacheEntry } from './cache-store.js';
import type { CacheEntries } from './cache-entries.js';
import type { Decode } from './decode.js';
import { Recent } from './recent.js';

/** Entries rebuilt per call by `refreshMany`. */
const REFRESHED_PER_CALL = 250;
/**
 * Entries marked stale per call by `invalidate` (a marker is a few bytes, but each is a
 * compare-and-set): 2 000 a call took 15 ms at rest and ran past the 50 ms a call may take on a
 * loaded machine, and a marker call lost inside a write drops the whole cache after it.
 */
const MARKED_PER_CALL = 500;

/** Entries already read for this request (`Prefetched` in projections): a hit is used as it is. */
export interface PrefetchedLookup {
  lookup(key: string): { readonly ok: true; readonly entry: CacheEntry } | undefined;
}

/** A cache read: the decoded value, the entry as stored (its JSON is valid), and where it came from. */
export interface CachedRead<T> {
  readonly value: T;
  readonly entry: CacheEntry;
  readonly cache: CacheOutcome;
}

/**
 * Cache-aside for one resource read by id (ARCHITECTURE.md): read the cache, fall back to the
 * database on a miss or a cache failure, refill; after each commit the service calls `refresh`
 * with the new row so the entry is rebuilt at the new version. Concurrent misses of one key
 * share a single database load (single-flight, per instance).
 */
export class CacheAside<T, Id extends string | number = number> {
  private readonly inflight = new Map<string, Promise<CacheEntry | undefined>>();
  /**
   * The last value decoded per key, with the JSON it came from: a hit whose JSON is the same
   * string is not parsed again (most hits, since entries change only on writes). Frozen, as it is
   * shared by every request that reads it.
   */
  private readonly decoded = new Recent<string, { readonly json: string; readonly value: T }>(DECODED_PER_KIND);
  /**
   * The last load of each key and when it began (`performance.now()`): a read whose cache lookup
   * was sent before that and came back a miss takes its result. The load read the database after
   * the lookup was sent, so after every write whose response came before it: nothing older than
   * what the read may answer. (A load that began earlier may have read before such a write; it is
   * never taken.) Without it, every read of a stampede whose lookup is still on the wire when the
   * load ends makes a load of its own (measured: 25 loads for 200 concurrent reads on a busy
   * machine instead of 1).
   */
  private readonly loaded = new Recent<
    string,
    { readonly began: number; readonly ended: number; readonly entry: CacheEntry }
  >(DECODED_PER_KIND);

  constructor(
    private readonly cache: CacheEntries,
    private readonly keyOf: (id: Id) => string,
    private readonly load: (id: Id) => Promise<CacheEntry | undefined>,
    private readonly decode: Decode<T>,
    /** The id a value says it is, when it carries one: a value under another record's key is unreadable. */
    private readonly idOf?: (value: T) => Id,
  ) {}

  /**
   * Undefined when the record does not exist at all. `prefetched`: what the guard already read for
   * this request (a hit is used as it is; a miss is asked again).
   */
  async get(id: Id, prefetched?: PrefetchedLookup): Promise<CachedRead<T> | undefined> {
    const key = this.keyOf(id);
    const found = prefetched?.lookup(key);
    if (found !== undefined) return this.settle(id, found);
    const asked = performance.now();
    return this.settle(id, await this.cache.get(key), asked);
  }

  /** Finishes a read whose cache lookup was made elsewhere (batched with other keys in one round trip). */
  async settle(
    id: Id,
    lookup: { readonly ok: boolean; readonly entry: CacheEntry | undefined },
    asked?: number,
  ): Promise<CachedRead<T> | undefined> {
    if (lookup.entry !== undefined && !isTombstone(lookup.entry)) {
      const value = this.readable(id, lookup.entry);
      if (value !== undefined) return { value, entry: lookup.entry, cache: 'hit' };
      // An entry that cannot be read back is a miss: removed, reloaded from the database, refilled.
      await this.cache.dropUnreadable(this.keyOf(id), lookup.entry);
    }
    let entry = await this.loadOnce(this.keyOf(id), id, lookup.ok, asked);
    // A tombstone holds the version a write left: a load this read joined that began before that
    // write committed comes back older, and is read again on its own.
    const floor = lookup.entry !== undefined && isTombstone(lookup.entry) ? lookup.entry.version : 0;
    if (entry !== undefined && entry.version < floor) entry = await this.loadAlone(this.keyOf(id), id, lookup.ok);
    if (entry === undefined) return undefined;
    const value = this.decode(entry.json);
    if (value === undefined)
      throw new Error(`the projection ${this.keyOf(id)} loaded from the database does not decode`);
    return { value, entry, cache: lookup.ok ? 'miss' : 'bypass' };
  }

  key(id: Id): string {
    return this.keyOf(id);
  }

  /**
   * The entry already read for this request (`prefetched`) when it is a plain hit: live, and
   * readable as this record's by the very check `get` makes. Never a lookup, never a load.
   */
  hit(id: Id, prefetched: PrefetchedLookup | undefined): CachedRead<T> | undefined {
    const found = prefetched?.lookup(this.keyOf(id));
    if (found === undefined || isTombstone(found.entry)) return undefined;
    const value = this.readable(id, found.entry);
    return value === undefined ? undefined : { value, entry: found.entry, cache: 'hit' };
  }

  /** The value of a live entry when it decodes and is this record's (a foreign or corrupt one is not). */
  private readable(id: Id, entry: CacheEntry): T | undefined {
    const value = this.decodeOnce(this.keyOf(id), entry.json);
    return value !== undefined && (this.idOf === undefined || this.idOf(value) === id) ? value : undefined;
  }

  private decodeOnce(key: string, json: string): T | undefined {
    const known = this.decoded.get(key);
    if (known !== undefined && known.json === json) return known.value;
    const value = this.decode(json);
    if (value === undefined) return undefined;
    this.decoded.set(key, { json, value: deepFreeze(value) });
    return value;
  }

  /**
   * Marks the entry stale at `version` without rebuilding it (bulk writes): the next read loads
   * it, and a fill from before the write (an older version) can no longer be stored. False when
   * a call did not land (counted as a lost write).
   */
  async invalidate(versions: ReadonlyMap<Id, number>): Promise<boolean> {
    const marks = [...versions].map(
      ([id, version]) => [this.keyOf(id), { version, deleted: false, json: '' }] as const,
    );
    let landed = true;
    for (let start = 0; start < marks.length; start += MARKED_PER_CALL)
      if (!(await this.cache.putMany(marks.slice(start, start + MARKED_PER_CALL)))) landed = false;
    return landed;
  }

  /**
   * Rebuilds many entries after a commit (the members of a changed group), a few hundred per call:
   * one round trip each instead of one per entry, which at thousands at once ran past the budget.
   */
  async refreshMany(entries: readonly (readonly [Id, CacheEntry])[]): Promise<void> {
    for (let start = 0; start < entries.length; start += REFRESHED_PER_CALL)
      await this.cache.putMany(
        entries.slice(start, start + REFRESHED_PER_CALL).map(([id, entry]) => [this.keyOf(id), entry] as const),
      );
  }

  /** Rebuilds the entry after a commit; an older concurrent fill can no longer overwrite it. */
  async refresh(id: Id, entry: CacheEntry): Promise<void> {
    await this.cache.put(this.keyOf(id), entry, true);
  }

  private loadOnce(key: string, id: Id, fill: boolean, asked?: number): Promise<CacheEntry | undefined> {
    const running = this.inflight.get(key);
    if (running !== undefined) return running;
    const last = asked === undefined ? undefined : this.loaded.get(key);
    if (last !== undefined && asked !== undefined && last.began > asked) return Promise.resolve(last.entry);
    // A load that began before this lookup was sent cannot be taken, but if it ended after, its
    // fill may simply have reached the cache behind the lookup: the cache is asked once more (a
    // write answered before that second lookup has replaced or tombstoned the entry by then, as
    // every write does before it answers), and only a second miss loads.
    if (last !== undefined && asked !== undefined && fill && last.ended >= asked) return this.lookAgain(key, id);
    return this.loadShared(key, id, fill);
  }

  private loadShared(key: string, id: Id, fill: boolean): Promise<CacheEntry | undefined> {
    const running = this.inflight.get(key);
    if (running !== undefined) return running;
    const loading = this.loadAlone(key, id, fill).finally(() => this.inflight.delete(key));
    this.inflight.set(key, loading);
    return loading;
  }

  /** The second lookup of a read that just missed a fill: a readable entry of this record, or a load. */
  private async lookAgain(key: string, id: Id): Promise<CacheEntry | undefined> {
    const again = await this.cache.get(key);
    const entry = again.entry;
    if (entry !== undefined && !isTombstone(entry) && this.readable(id, entry) !== undefined) return entry;
    return this.loadShared(key, id, again.ok);
  }

  private async loadAlone(key: string, id: Id, fill: boolean): Promise<CacheEntry | undefined> {
    this.cache.stats.loads += 1;
    const began = performance.now();
    const entry = await this.load(id);
    if (entry !== undefined && fill) await this.cache.put(key, entry, false);
    if (entry !== undefined) this.loaded.set(key, { began, ended: performance.now(), entry });
    return entry;
  }
}

/** Decoded values kept per kind of projection (sessions, users, each resource type). */
const DECODED_PER_KIND = 512;

function deepFreeze<V>(value: V): V {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const field of Object.values(value)) deepFreeze(field);
  }
  return value;
}

/** An invalidation marker: it holds a version (to refuse older fills) but no data. */
function isTombstone(entry: CacheEntry): boolean {
  return entry.json === '';
}

/** Builds a cache entry from a row that has `version` and, if soft-deletable, `is_deleted`. */
export function entryOf(row: { version: number; is_deleted?: boolean }): CacheEntry {
  return { version: row.version, deleted: row.is_deleted === true, json: JSON.stringify(row) };
}
