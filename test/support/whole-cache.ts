import { WindowCounters } from '../../src/platform/auth/window-counters.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import type { CacheEntry } from '../../src/platform/cache/cache-store.js';
import type { CacheService } from '../../src/platform/cache/cache.service.js';
import { TableGenerations } from '../../src/platform/cache/table-generations.js';

/**
 * The envelope and the three kinds of calls made through it (entries, table generations,
 * rate-limit windows), under one name, so that a spec of the envelope's rules can drive every
 * kind of call the service makes.
 */
export function wholeCache(envelope: CacheService) {
  const entries = new CacheEntries(envelope);
  const generations = new TableGenerations(envelope);
  const counters = new WindowCounters(envelope);
  return {
    envelope,
    entries,
    generations,
    counters,
    stats: envelope.stats,
    get: (key: string) => entries.get(key),
    getMany: (keys: readonly string[]) => entries.getMany(keys),
    put: (key: string, entry: CacheEntry, afterWrite: boolean) => entries.put(key, entry, afterWrite),
    putMany: (list: readonly (readonly [string, CacheEntry])[]) => entries.putMany(list),
    dropUnreadable: (key: string, entry: CacheEntry) => entries.dropUnreadable(key, entry),
    dropByPrefix: (prefix: string) => entries.dropByPrefix(prefix),
    tableGenerations: (tables: readonly string[]) => generations.current(tables),
    tablesWritten: (tables: readonly string[]) => generations.bump(tables),
    listPage: (key: string, tables: readonly string[]) => generations.pageWith(key, tables),
    increment: (key: string, windowMs: number, by?: number) => counters.increment(key, windowMs, by),
    invalidateAll: () => envelope.invalidateAll(),
    probe: () => envelope.probe(),
  };
}

export type WholeCache = ReturnType<typeof wholeCache>;
