import type { Logger } from '@nestjs/common';
import { CACHE_SHARDS, shardOf, storedKeys } from './cache-keys.js';
import { decodeEntry, encodeEntry, type CacheEntry, type CacheStore, type WindowCount } from './cache-store.js';
import { connectRedis, type RedisConnection } from './redis-connection.js';
import {
  BUMP_GENERATIONS,
  DELETE_IF_SAME,
  GET_MANY,
  INCREMENT,
  READ_GENERATIONS,
  SET_MANY_IF_NOT_OLDER,
  TOMBSTONE,
} from './redis-scripts.js';

/** Groups items by the shard of their key, keeping each item's position. */
function byShard<T>(items: readonly T[], keyOf: (item: T) => string): Map<number, { item: T; index: number }[]> {
  const shards = new Map<number, { item: T; index: number }[]>();
  items.forEach((item, index) => {
    const shard = shardOf(keyOf(item));
    const group = shards.get(shard) ?? [];
    group.push({ item, index });
    shards.set(shard, group);
  });
  return shards;
}

const asArray = (raw: unknown): unknown[] => (Array.isArray(raw) ? (raw as unknown[]) : []);

/**
 * Redis, one server or a cluster, with Lua scripts for the versioned operations. Every entry lives
 * in one of CACHE_SHARDS shards under that shard's generation. On a cluster a call touching
 * several shards makes one script call per shard (in parallel), so no script ever crosses a hash
 * slot; on one server it is one script call.
 */
export class RedisCacheStore implements CacheStore {
  readonly kind = 'redis' as const;
  private readonly redis: RedisConnection;
  private readonly shards: readonly { readonly generation: string; readonly head: string }[];

  constructor(
    url: string,
    private readonly prefix: string,
    logger: Logger,
  ) {
    this.redis = connectRedis(url, logger);
    this.shards = Array.from({ length: CACHE_SHARDS }, (_, shard) => ({
      generation: storedKeys.shardGeneration(prefix, shard),
      head: storedKeys.shardHead(prefix, shard),
    }));
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    const [entry] = await this.getMany([key]);
    return entry;
  }

  async getMany(keys: readonly string[]): Promise<(CacheEntry | undefined)[]> {
    const found: (CacheEntry | undefined)[] = keys.map(() => undefined);
    await Promise.all(
      this.batches(keys, (key) => key).map(async (batch) => {
        const raw = asArray(
          await this.redis.eval(
            GET_MANY,
            batch.map(({ item }) => this.shardKeys(item).generation),
            batch.flatMap(({ item }) => [this.shardKeys(item).head, item]),
          ),
        );
        batch.forEach(({ index }, position) => {
          const value = raw[position];
          found[index] = decodeEntry(typeof value === 'string' ? value : undefined);
        });
      }),
    );
    return found;
  }

  async increment(key: string, windowMs: number, by = 1): Promise<WindowCount> {
    const [count, ttl] = asArray(
      await this.redis.eval(INCREMENT, [storedKeys.counter(this.prefix, key)], [String(windowMs), String(by)]),
    );
    return { count: Number(count), resetInMs: Number(ttl) };
  }

  async deleteIfSame(key: string, entry: CacheEntry): Promise<boolean> {
    const deleted = await this.redis.eval(
      DELETE_IF_SAME,
      [this.shardKeys(key).generation],
      [this.shardKeys(key).head, key, entry.raw ?? encodeEntry(entry)],
    );
    return deleted === 1;
  }

  /** Scans every master for the entries of the current generations and tombstones them, shard by shard. */
  async tombstoneByPrefix(keyPrefix: string): Promise<number> {
    const current = await this.shardGenerations();
    const heads = current.map((generation, shard) => `${this.shards[shard]?.head ?? ''}${generation}:`);
    const shardPattern = /\{s(\d+)\}:/;
    let dropped = 0;
    // `{` is not special in a SCAN pattern: this matches every shard's entries of every generation.
    for await (const keys of this.redis.scan(`${this.prefix}{s*}:*:${keyPrefix}*`)) {
      const live = new Map<number, string[]>();
      for (const key of keys) {
        const shard = Number(shardPattern.exec(key.slice(this.prefix.length))?.[1]);
        if (!key.startsWith(heads[shard] ?? '\0')) continue; // an older generation: unreachable already
        live.set(shard, [...(live.get(shard) ?? []), key]);
      }
      const groups = this.redis.isCluster
        ? [...live.values()]
        : [[...live.values()].flat()].filter((g) => g.length > 0);
      const counts = await Promise.all(groups.map((group) => this.redis.eval(TOMBSTONE, group)));
      dropped += counts.reduce<number>((sum, count) => sum + Number(count), 0);
    }
    return dropped;
  }

  async setIfNotOlder(key: string, entry: CacheEntry, ttlMs: number): Promise<boolean> {
    const [stored] = await this.setMany([[key, entry]], ttlMs);
    return stored === true;
  }

  async setManyIfNotOlder(entries: readonly (readonly [string, CacheEntry])[], ttlMs: number): Promise<void> {
    await this.setMany(entries, ttlMs);
  }

  // Table generations live outside the cache generations, like the counters: a list page is keyed
  // by the generations it was built under, so these must only ever grow.
  async bumpGenerations(names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    await this.redis.eval(
      BUMP_GENERATIONS,
      names.map((name) => storedKeys.tableGeneration(this.prefix, name)),
    );
  }

  async generations(names: readonly string[]): Promise<number[]> {
    if (names.length === 0) return [];
    // All table generations share one slot: one call reads them all.
    const raw = await this.redis.eval(
      READ_GENERATIONS,
      names.map((name) => storedKeys.tableGeneration(this.prefix, name)),
    );
    return asArray(raw).map(Number);
  }

  /**
   * A list page and its tables' generations, read side by side (they are in different slots). Not
   * atomic, and it need not be: a page is good only if it was built under exactly the generations
   * read now, and both reads start after the request did, so a write whose response was sent
   * before has bumped what is read here.
   */
  async getWithGenerations(
    key: string,
    names: readonly string[],
  ): Promise<{ entry: CacheEntry | undefined; generations: number[] }> {
    const [entry, generations] = await Promise.all([this.get(key), this.generations(names)]);
    return { entry, generations };
  }

  async flushAll(): Promise<void> {
    // Every shard's generation moves on: what was stored under the old ones is unreachable.
    await this.onEveryShardGeneration(BUMP_GENERATIONS);
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  failed(): void {
    this.redis.failed();
  }

  async close(): Promise<void> {
    await this.redis.close();
  }

  private async setMany(entries: readonly (readonly [string, CacheEntry])[], ttlMs: number): Promise<boolean[]> {
    const stored = entries.map(() => false);
    await Promise.all(
      this.batches(entries, ([key]) => key).map(async (batch) => {
        const raw = asArray(
          await this.redis.eval(
            SET_MANY_IF_NOT_OLDER,
            batch.map(({ item: [key] }) => this.shardKeys(key).generation),
            [
              String(ttlMs),
              ...batch.flatMap(({ item: [key, entry] }) => [
                this.shardKeys(key).head,
                key,
                String(entry.version),
                encodeEntry(entry),
              ]),
            ],
          ),
        );
        batch.forEach(({ index }, position) => (stored[index] = raw[position] === 1));
      }),
    );
    return stored;
  }

  /** The generation and head of a key's shard (strings built once per shard, not per call). */
  private shardKeys(key: string): { readonly generation: string; readonly head: string } {
    return this.shards[shardOf(key)] ?? { generation: '', head: '' };
  }

  /**
   * The calls to make for these items: one per shard on a cluster (a script keeps to one slot),
   * one for all of them on a single server (one round trip, the run id read once).
   */
  private batches<T>(items: readonly T[], keyOf: (item: T) => string): { item: T; index: number }[][] {
    if (!this.redis.isCluster) return items.length === 0 ? [] : [items.map((item, index) => ({ item, index }))];
    return [...byShard(items, keyOf).values()];
  }

  /** Each shard's current generation. */
  private async shardGenerations(): Promise<string[]> {
    return (await this.onEveryShardGeneration(READ_GENERATIONS)).map(String);
  }

  /**
   * A generations script (read or bump) over every shard's generation, answering one value per
   * shard: one call on a single server, one per shard (each its own slot) on a cluster.
   */
  private async onEveryShardGeneration(script: string): Promise<unknown[]> {
    const keys = this.shards.map((shard) => shard.generation);
    if (!this.redis.isCluster) return asArray(await this.redis.eval(script, keys));
    return Promise.all(keys.map(async (key) => asArray(await this.redis.eval(script, [key]))[0]));
  }
}
