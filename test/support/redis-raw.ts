import { createClient, createCluster } from '@keyv/redis';
import { storedKeys } from '../../src/platform/cache/cache-keys.js';
import { parseClusterUrl } from '../../src/platform/config/redis-url.js';

/** The types no key of the service ever holds (all of its keys are strings). */
export const WRONG_TYPES = ['list', 'hash', 'set'] as const;
export type WrongType = (typeof WRONG_TYPES)[number];

/** Plain Redis commands behind the service's back, on one server or a cluster alike. */
export interface RawRedis {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, options?: { KEEPTTL?: true }): Promise<unknown>;
  del(key: string): Promise<number>;
  type(key: string): Promise<string>;
  /** Replaces the key with one of another type, as a stray LPUSH, HSET or SADD would leave it. */
  plant(key: string, type: WrongType): Promise<void>;
  /** Keys matching `pattern` on every master. */
  keys(pattern: string): Promise<string[]>;
  /** The key under which the store keeps the logical `key` (in its shard; the value names its generation). */
  entryKey(prefix: string, key: string): Promise<string>;
  /** Every entry of the current generations under `prefix`: logical key → stored key. */
  entries(prefix: string): Promise<Map<string, string>>;
}

export async function withRawRedis<T>(url: string, work: (redis: RawRedis) => Promise<T>): Promise<T> {
  const cluster = parseClusterUrl(url);
  if (cluster === undefined) {
    const client = createClient({ url });
    await client.connect();
    try {
      return await work(
        raw(client, async (pattern) => {
          const found: string[] = [];
          for await (const batch of client.scanIterator({ MATCH: pattern, COUNT: 1000 })) found.push(...batch);
          return found;
        }),
      );
    } finally {
      await client.close();
    }
  }
  const client = createCluster({ rootNodes: cluster.nodes.map((socket) => ({ socket })) });
  await client.connect();
  try {
    return await work(
      raw(client, async (pattern) => {
        const found: string[] = [];
        for (const master of client.masters) {
          const node = await client.nodeClient(master);
          for await (const batch of node.scanIterator({ MATCH: pattern, COUNT: 1000 })) found.push(...batch);
        }
        return found;
      }),
    );
  } finally {
    await client.close();
  }
}

type Commands = Pick<ReturnType<typeof createClient>, 'get' | 'set' | 'del' | 'type' | 'lPush' | 'hSet' | 'sAdd'>;

function raw(client: Commands, keys: (pattern: string) => Promise<string[]>): RawRedis {
  const redis: RawRedis = {
    get: (key) => client.get(key),
    set: (key, value, options) => client.set(key, value, options),
    del: (key) => client.del(key),
    type: (key) => client.type(key),
    async plant(key, type) {
      await client.del(key);
      if (type === 'list') await client.lPush(key, 'junk');
      else if (type === 'hash') await client.hSet(key, 'junk', 'junk');
      else await client.sAdd(key, 'junk');
    },
    keys,
    entryKey(prefix, key) {
      return Promise.resolve(storedKeys.entry(prefix, key));
    },
    async entries(prefix) {
      const generations = new Map<number, string>();
      const found = new Map<string, string>();
      for (const stored of await keys(`${prefix}{s*}:e:*`)) {
        const match = /^\{s(\d+)\}:e:(.*)$/s.exec(stored.slice(prefix.length));
        if (match === null) continue;
        const shard = Number(match[1]);
        if (!generations.has(shard))
          generations.set(shard, (await redis.get(storedKeys.shardGeneration(prefix, shard)))?.split('@')[0] ?? '');
        const value = await redis.get(stored);
        if (value?.startsWith(`${generations.get(shard)}:`) === true) found.set(match[2] ?? '', stored);
      }
      return found;
    },
  };
  return redis;
}
