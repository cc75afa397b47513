/** A fixed-window counter's state after an increment (rate limits). */
export interface WindowCount {
  readonly count: number;
  readonly resetInMs: number;
}

/** An entry as stored: the row version it was built from, and the resource already serialised. */
export interface CacheEntry {
  readonly version: number;
  /** Soft-deleted records are cached too; detail reads turn them into 404s without parsing the JSON. */
  readonly deleted: boolean;
  readonly json: string;
  /** The stored value, when it is not an entry at all (so a compare-and-delete can match it). */
  readonly raw?: string;
}

/**
 * The raw store under the cache service. Both implementations keep the same promise: a set
 * never replaces an entry built from a newer version of the row (compare-and-set).
 */
export interface CacheStore {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<CacheEntry | undefined>;
  /** Several entries in one round trip (the auth context reads its session and user together). */
  getMany(keys: readonly string[]): Promise<(CacheEntry | undefined)[]>;
  /** Stores the entry unless the current one has a higher version; returns whether it was stored. */
  setIfNotOlder(key: string, entry: CacheEntry, ttlMs: number): Promise<boolean>;
  /** `setIfNotOlder` for many entries in one round trip (bulk invalidations). */
  setManyIfNotOlder(entries: readonly (readonly [string, CacheEntry])[], ttlMs: number): Promise<void>;
  /** Removes the entry only if it is still exactly `entry` (an unreadable one found by a read); true if removed. */
  deleteIfSame(key: string, entry: CacheEntry): Promise<boolean>;
  /**
   * Makes every entry whose key starts with `keyPrefix` a miss (in batches), keeping the version
   * floor that refuses older fills; answers how many.
   */
  tombstoneByPrefix(keyPrefix: string): Promise<number>;
  /** Makes every existing entry unreachable at once (after an outage in which invalidations were lost). */
  flushAll(): Promise<void>;
  /** Counts `by` events in a fixed window that starts with the first one; returns the count so far and the time left. */
  increment(key: string, windowMs: number, by?: number): Promise<WindowCount>;
  /** Adds one to each named generation (never reset, never expired): what was built under the old one is unusable. */
  bumpGenerations(names: readonly string[]): Promise<void>;
  /** The named generations now, 0 for one never bumped. */
  generations(names: readonly string[]): Promise<number[]>;
  /** An entry and the named generations in one round trip (a list page and the tables it was built from). */
  getWithGenerations(
    key: string,
    names: readonly string[],
  ): Promise<{ entry: CacheEntry | undefined; generations: number[] }>;
  ping(): Promise<void>;
  /** Told of a call that failed or ran out of time (a cluster then re-reads where its slots are). */
  failed?(): void;
  close(): Promise<void>;
}

export function encodeEntry(entry: CacheEntry): string {
  return `${entry.version}|${entry.deleted ? 1 : 0}|${entry.json}`;
}

/**
 * What a value that is not an entry at all decodes to: version 0 (any fill replaces it) and JSON
 * no decoder accepts, so the read counts it as unreadable and reloads.
 */
export const UNREADABLE_ENTRY: CacheEntry = Object.freeze({ version: 0, deleted: false, json: 'unreadable' });

/** Undefined for no value; `UNREADABLE_ENTRY` for a value that is not an entry. */
export function decodeEntry(raw: string | null | undefined): CacheEntry | undefined {
  if (raw === null || raw === undefined) return undefined;
  const match = /^(\d+)\|([01])\|/.exec(raw);
  if (match === null) return { ...UNREADABLE_ENTRY, raw };
  return { version: Number(match[1]), deleted: match[2] === '1', json: raw.slice(match[0].length) };
}
