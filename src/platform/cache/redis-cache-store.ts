import type { Logger } from '@nestjs/common';
import { CACHE_SHARDS, cacheKeys, shardOf, storedKeys } from './cache-keys.js';
import { encodeEntry, type CacheEntry, type CacheStore, type WindowCount } from './cache-store.js';
import { connectRedis, type RedisConnection, type StampedValues } from './redis-connection.js';
import {
  BUMP_GENERATIONS,
  DELETE_IF_SAME,
  GET_MANY,
  INCREMENT,
  READ_GENERATIONS,
  SET_MANY_IF_NOT_OLDER,
  TOMBSTONE,
  type RedisScript,
} from './redis-scripts.js';
import type { Identity } from './server-identity.js';
import { entryUnder, trustedGeneration } from './stored-values.js';

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
 * Redis, one server or a cluster. Every entry lives in one of CACHE_SHARDS shards and counts only
 * under that shard's current generation (ARCHITECTURE.md, the cache-aside wrapper).
 *
 * On one server a read is a single plain MGET of the entries and their shards' generations,
 * checked here against the server's stamp as it answers (its run id, learned on this connection,
 * and its replication id and role, asked in the same round trip; nothing from a replica); only a
 * generation under another stamp (a failover, a restart, an eviction, a first replica) sends the
 * read through a script, which restarts it or finds it the server's own. Writes are scripts, called by SHA. On a cluster every call is a script per
 * shard (in parallel), each asking its own node who it is, so no call ever crosses a hash slot.
 */
export class RedisCacheStore implements CacheStore {
  readonly kind = 'redis' as const;
  private readonly redis: RedisConnection;
  private readonly shardGenerations: readonly string[];
  private readonly shardHeads: readonly string[];

  constructor(
    url: string,
    private readonly prefix: string,
    logger: Logger,
  ) {
    this.redis = connectRedis(url, logger);
    this.shardGenerations = Array.from({ length: CACHE_SHARDS }, (_, shard) =>
      storedKeys.shardGeneration(prefix, shard),
    );
    this.shardHeads = Array.from({ length: CACHE_SHARDS }, (_, shard) => storedKeys.shardHead(prefix, shard));
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    const [entry] = await this.getMany([key]);
    return entry;
  }

  async getMany(keys: readonly string[]): Promise<(CacheEntry | undefined)[]> {
    if (keys.length === 0) return [];
    const identity = await this.redis.identity();
    if (!this.redis.isCluster) {
      // [generation, entry] per key, in one MGET (shared with the turn's other reads, each key once).
      const { values: stored, stamp } = await this.mget(
        identity,
        keys.flatMap((key) => this.storedPair(key)),
      );
      const found: (CacheEntry | undefined)[] = [];
      for (let i = 0; i < keys.length; i += 1) {
        const generation = trustedGeneration(stored[2 * i], stamp);
        if (generation === undefined) break;
        found.push(entryUnder(stored[2 * i + 1], generation));
      }
      if (found.length === keys.length) return found;
      return this.getManyByScript({ ...identity, stamp }, keys);
    }
    return this.getManyByScript(identity, keys);
  }

  async increment(key: string, windowMs: number, by = 1): Promise<WindowCount> {
    const [count, ttl] = asArray(
      await this.redis.eval(INCREMENT, [storedKeys.counter(this.prefix, key)], [String(windowMs), String(by)]),
    );
    return { count: Number(count), resetInMs: Number(ttl) };
  }

  async deleteIfSame(key: string, entry: CacheEntry): Promise<boolean> {
    const deleted = await this.redis.eval(DELETE_IF_SAME, [this.storedPair(key)[1]], [entry.raw ?? encodeEntry(entry)]);
    return deleted === 1;
  }

  /** Scans every master for the entries under `keyPrefix` and tombstones them, shard by shard. */
  async tombstoneByPrefix(keyPrefix: string): Promise<number> {
    let dropped = 0;
    // `{` is not special in a SCAN pattern: this matches every shard's entries.
    for await (const keys of this.redis.scan(`${this.prefix}{s*}:e:${keyPrefix}*`)) {
      const groups = this.redis.isCluster ? [...this.byStoredShard(keys).values()] : [keys].filter((g) => g.length > 0);
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
    await this.generationScript(BUMP_GENERATIONS, names.map(this.tableGeneration));
  }

  async generations(names: readonly string[]): Promise<number[]> {
    if (names.length === 0) return [];
    const keys = names.map(this.tableGeneration);
    if (!this.redis.isCluster) {
      const identity = await this.redis.identity();
      const { values, stamp } = await this.mget(identity, keys);
      const known = values.map((raw) => trustedGeneration(raw, stamp));
      if (known.every((generation) => generation !== undefined)) return known.map(Number);
    }
    // All table generations share one slot: one call reads (and restarts) them all.
    return (await this.generationScript(READ_GENERATIONS, keys)).map(Number);
  }

  /**
   * A list page and its tables' generations. Not atomic, and it need not be: a page is good only
   * if it was built under exactly the generations read now, and both reads start after the request
   * did, so a write whose response was sent before has bumped what is read here. One MGET on one
   * server; side by side on a cluster (they are in different slots).
   */
  async getWithGenerations(
    key: string,
    names: readonly string[],
  ): Promise<{ entry: CacheEntry | undefined; generations: number[] }> {
    if (!this.redis.isCluster) {
      const identity = await this.redis.identity();
      const tables = names.map(this.tableGeneration);
      const { values, stamp } = await this.mget(identity, [...this.storedPair(key), ...tables]);
      const [shard, stored, ...found] = values;
      const generation = trustedGeneration(shard, stamp);
      const generations = found.map((raw) => trustedGeneration(raw, stamp));
      if (generation !== undefined && generations.every((one) => one !== undefined))
        return { entry: entryUnder(stored, generation), generations: generations.map(Number) };
    }
    const [entry, generations] = await Promise.all([this.get(key), this.generations(names)]);
    return { entry, generations };
  }

  async flushAll(): Promise<void> {
    // Every shard's generation moves on: what was stored under the old ones counts no more. So
    // does the flush generation (a table generation): totals remembered by the instances under it.
    const keys = this.shardGenerations;
    const flushes = this.tableGeneration(cacheKeys.flushGeneration);
    if (!this.redis.isCluster) await this.generationScript(BUMP_GENERATIONS, [...keys, flushes]);
    else await Promise.all([...keys, flushes].map((key) => this.generationScript(BUMP_GENERATIONS, [key])));
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

  /** The entries through GET_MANY: one call on one server, one per shard on a cluster. */
  private async getManyByScript(identity: Identity, keys: readonly string[]): Promise<(CacheEntry | undefined)[]> {
    const found: (CacheEntry | undefined)[] = keys.map(() => undefined);
    await Promise.all(
      this.batches(keys, (key) => key).map(async (batch) => {
        const raw = asArray(
          await this.script(
            identity,
            GET_MANY,
            batch.flatMap(({ item }) => this.storedPair(item)),
            [],
          ),
        );
        // The script answers only entries of the current generation (or values that are no entry).
        batch.forEach(({ index }, position) => {
          const value = raw[position];
          found[index] = entryUnder(typeof value === 'string' ? value : undefined, undefined);
        });
      }),
    );
    return found;
  }

  private async setMany(entries: readonly (readonly [string, CacheEntry])[], ttlMs: number): Promise<boolean[]> {
    const stored = entries.map(() => false);
    const identity = await this.redis.identity();
    await Promise.all(
      this.batches(entries, ([key]) => key).map(async (batch) => {
        const raw = asArray(
          await this.script(
            identity,
            SET_MANY_IF_NOT_OLDER,
            batch.flatMap(({ item: [key] }) => this.storedPair(key)),
            [String(ttlMs), ...batch.flatMap(({ item: [, entry] }) => [String(entry.version), encodeEntry(entry)])],
          ),
        );
        batch.forEach(({ index }, position) => (stored[index] = raw[position] === 1));
      }),
    );
    return stored;
  }

  /** A generation script (read or bump) over keys of one slot, with the server's identity. */
  private async generationScript(script: RedisScript, keys: readonly string[]): Promise<unknown[]> {
    return asArray(await this.script(await this.redis.identity(), script, keys, []));
  }

  /** A script told the server's stamp; its answer counts only if no reconnect happened meanwhile. */
  private async script(
    identity: Identity,
    script: RedisScript,
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown> {
    const answer = await this.redis.eval(script, keys, [identity.stamp, ...args]);
    if (!this.redis.still(identity)) throw new Error('the redis connection changed during the call');
    return answer;
  }

  private async mget(identity: Identity, keys: readonly string[]): Promise<StampedValues> {
    const stamped = await this.redis.mget(identity, keys);
    if (!this.redis.still(identity)) throw new Error('the redis connection changed during the call');
    return stamped;
  }

  /** Stored entry keys grouped by their shard (its hash tag), for scripts that keep to one slot. */
  private byStoredShard(keys: readonly string[]): Map<string, string[]> {
    const groups = new Map<string, string[]>();
    for (const key of keys) {
      const tag = /^\{s\d+\}/.exec(key.slice(this.prefix.length))?.[0] ?? '';
      groups.set(tag, [...(groups.get(tag) ?? []), key]);
    }
    return groups;
  }

  /** A logical key's shard generation and entry, as stored. */
  private storedPair(key: string): [string, string] {
    const shard = shardOf(key);
    return [this.shardGenerations[shard] ?? '', `${this.shardHeads[shard] ?? ''}${key}`];
  }

  private readonly tableGeneration = (name: string): string => storedKeys.tableGeneration(this.prefix, name);

  /**
   * The calls to make for these items: one per shard on a cluster (a script keeps to one slot),
   * one for all of them on a single server (one round trip).
   */
  private batches<T>(items: readonly T[], keyOf: (item: T) => string): { item: T; index: number }[][] {
    if (!this.redis.isCluster) return items.length === 0 ? [] : [items.map((item, index) => ({ item, index }))];
    return [...byShard(items, keyOf).values()];
  }
}
