// The service's own Lua scripts and key layout (shards, each under its generation), so a
// baseline does exactly the same Redis work as the service for the entries it reads and writes.
import { shardOf, storedKeys } from '../../dist/src/platform/cache/cache-keys.js';
import { GET_MANY, SET_MANY_IF_NOT_OLDER } from '../../dist/src/platform/cache/redis-scripts.js';

const PREFIX = 'admin-api:';

/** The raw values of `keys`, one script call per shard (in parallel), as the service reads them. */
export async function getEntries(redis, keys) {
  const shards = new Map();
  keys.forEach((key, index) => {
    const shard = shardOf(key);
    shards.set(shard, [...(shards.get(shard) ?? []), { key, index }]);
  });
  const found = keys.map(() => null);
  await Promise.all(
    [...shards].map(async ([shard, group]) => {
      const raw = await redis.eval(GET_MANY, {
        keys: [storedKeys.shardGeneration(PREFIX, shard)],
        arguments: [storedKeys.shardHead(PREFIX, shard), ...group.map(({ key }) => key)],
      });
      group.forEach(({ index }, position) => (found[index] = raw[position] ?? null));
    }),
  );
  return found;
}

/** The versioned compare-and-set of one entry. */
export async function setEntry(redis, key, version, value, ttlMs) {
  const shard = shardOf(key);
  await redis.eval(SET_MANY_IF_NOT_OLDER, {
    keys: [storedKeys.shardGeneration(PREFIX, shard)],
    arguments: [storedKeys.shardHead(PREFIX, shard), String(ttlMs), key, String(version), value],
  });
}
