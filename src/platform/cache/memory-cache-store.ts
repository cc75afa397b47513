import { cacheKeys } from './cache-keys.js';
import type { CacheEntry, CacheStore, WindowCount } from './cache-store.js';

interface Slot {
  readonly entry: CacheEntry;
  readonly expiresAt: number;
}

/** The in-process cache used when REDIS_URL is unset: one instance only, bounded in size. */
export class MemoryCacheStore implements CacheStore {
  readonly kind = 'memory' as const;
  private readonly slots = new Map<string, Slot>();
  private readonly counters = new Map<string, { count: number; resetAt: number }>();
  private readonly named = new Map<string, number>();

  constructor(private readonly maxEntries = 100_000) {}

  get(key: string): Promise<CacheEntry | undefined> {
    const slot = this.slots.get(key);
    if (slot === undefined) return Promise.resolve(undefined);
    if (slot.expiresAt <= Date.now()) {
      this.slots.delete(key);
      return Promise.resolve(undefined);
    }
    return Promise.resolve(slot.entry);
  }

  getMany(keys: readonly string[]): Promise<(CacheEntry | undefined)[]> {
    return Promise.all(keys.map((key) => this.get(key)));
  }

  bumpGenerations(names: readonly string[]): Promise<void> {
    for (const name of names) this.named.set(name, (this.named.get(name) ?? 0) + 1);
    return Promise.resolve();
  }

  generations(names: readonly string[]): Promise<number[]> {
    return Promise.resolve(names.map((name) => this.named.get(name) ?? 0));
  }

  async getWithGenerations(
    key: string,
    names: readonly string[],
  ): Promise<{ entry: CacheEntry | undefined; generations: number[] }> {
    return { entry: await this.get(key), generations: await this.generations(names) };
  }

  increment(key: string, windowMs: number, by = 1): Promise<WindowCount> {
    const now = Date.now();
    let counter = this.counters.get(key);
    if (counter === undefined || counter.resetAt <= now) {
      if (this.counters.size >= this.maxEntries) this.dropExpiredCounters(now);
      counter = { count: 0, resetAt: now + windowMs };
      this.counters.set(key, counter);
    }
    counter.count += by;
    return Promise.resolve({ count: counter.count, resetInMs: counter.resetAt - now });
  }

  async setManyIfNotOlder(entries: readonly (readonly [string, CacheEntry])[], ttlMs: number): Promise<void> {
    for (const [key, entry] of entries) await this.setIfNotOlder(key, entry, ttlMs);
  }

  tombstoneByPrefix(keyPrefix: string): Promise<number> {
    const keys = [...this.slots].filter(([key]) => key.startsWith(keyPrefix));
    for (const [key, slot] of keys)
      this.slots.set(key, { ...slot, entry: { version: slot.entry.version, deleted: false, json: '' } });
    return Promise.resolve(keys.length);
  }

  deleteIfSame(key: string, entry: CacheEntry): Promise<boolean> {
    const current = this.slots.get(key)?.entry;
    const same = current?.version === entry.version && current.deleted === entry.deleted && current.json === entry.json;
    if (same) this.slots.delete(key);
    return Promise.resolve(same);
  }

  setIfNotOlder(key: string, entry: CacheEntry, ttlMs: number): Promise<boolean> {
    const current = this.slots.get(key);
    if (current !== undefined && current.expiresAt > Date.now() && current.entry.version > entry.version)
      return Promise.resolve(false);
    this.slots.delete(key);
    if (this.slots.size >= this.maxEntries) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.slots.keys().next().value;
      if (oldest !== undefined) this.slots.delete(oldest);
    }
    this.slots.set(key, { entry, expiresAt: Date.now() + ttlMs });
    return Promise.resolve(true);
  }

  flushAll(): Promise<void> {
    this.slots.clear();
    return this.bumpGenerations([cacheKeys.flushGeneration]);
  }

  ping(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.slots.clear();
    this.counters.clear();
    return Promise.resolve();
  }

  private dropExpiredCounters(now: number): void {
    for (const [key, counter] of this.counters) if (counter.resetAt <= now) this.counters.delete(key);
  }
}
