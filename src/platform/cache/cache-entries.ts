import type { CacheEntry } from './cache-store.js';
import type { CacheService, CacheStats } from './cache.service.js';

/** A lookup of one or several entries: `ok: false` when the cache could not be asked (`bypass`). */
export interface EntryLookup {
  readonly ok: boolean;
  readonly entry: CacheEntry | undefined;
}

/**
 * The cache's entries (details, list pages, auth contexts), each stored with the row version it
 * was built from; every call goes through the envelope (budget, breaker, dirty flush) and never
 * throws. Hits and misses are counted here, in the envelope's stats.
 */
export class CacheEntries {
  constructor(readonly cache: CacheService) {}

  /** The envelope's counters (hits, misses, loads, …), shown on /health/ready. */
  get stats(): CacheStats {
    return this.cache.stats;
  }

  get ttlMs(): number {
    return this.cache.ttlMs;
  }

  async get(key: string): Promise<EntryLookup> {
    const result = await this.cache.call('get', key, (store) => store.get(key), { lookup: true });
    if (!result.ok) return { ok: false, entry: undefined };
    this.count(result.value);
    return { ok: true, entry: result.value };
  }

  /** Like `get` for several keys in one round trip. */
  async getMany(keys: readonly string[]): Promise<{ ok: boolean; entries: (CacheEntry | undefined)[] }> {
    const result = await this.cache.call('mget', keys.join(','), (store) => store.getMany(keys), { lookup: true });
    if (!result.ok) return { ok: false, entries: keys.map(() => undefined) };
    for (const entry of result.value) this.count(entry);
    return { ok: true, entries: result.value };
  }

  /** Fills after a read (`afterWrite: false`) or rebuilds after a commit (`afterWrite: true`). */
  async put(key: string, entry: CacheEntry, afterWrite: boolean): Promise<boolean> {
    const result = await this.cache.call('set', key, (store) => store.setIfNotOlder(key, entry, this.ttlMs), {
      afterWrite,
    });
    return result.ok;
  }

  /** Many post-commit sets in one round trip (bulk writes). */
  async putMany(entries: readonly (readonly [string, CacheEntry])[]): Promise<boolean> {
    const result = await this.cache.call(
      'mset',
      `${entries.length} keys`,
      (store) => store.setManyIfNotOlder(entries, this.ttlMs),
      { afterWrite: true },
    );
    return result.ok;
  }

  /**
   * Removes an entry a read found unreadable (its version may be anything, even higher than the
   * record's, which would refuse every fill), unless a write replaced it meanwhile.
   */
  async dropUnreadable(key: string, entry: CacheEntry): Promise<void> {
    this.cache.stats.unreadable += 1;
    await this.cache.call('del', key, (store) => store.deleteIfSame(key, entry));
  }

  /**
   * Drops the entries of one kind of projection (`auth:`, `res:`, …) for a triggered rebuild;
   * undefined when the cache could not be reached (the rebuild then fails and is retried).
   */
  async dropByPrefix(keyPrefix: string): Promise<number | undefined> {
    // A background job walking the whole key space: its own budget, not the 50 ms of a request.
    const result = await this.cache.call('scan-del', `${keyPrefix}*`, (store) => store.tombstoneByPrefix(keyPrefix), {
      budgetMs: 60_000,
    });
    return result.ok ? result.value : undefined;
  }

  private count(entry: CacheEntry | undefined): void {
    if (entry === undefined) this.cache.stats.misses += 1;
    else this.cache.stats.hits += 1;
  }
}
