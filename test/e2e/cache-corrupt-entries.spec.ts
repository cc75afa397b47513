import { randomUUID } from 'node:crypto';
import { shardOf, storedKeys } from '../../src/platform/cache/cache-keys.js';
import { startApp, type TestApp } from '../support/app.js';
import { withRawRedis } from '../support/redis-raw.js';
import { stampOf } from '../support/redis-replication.js';
import { OwnRedis } from '../support/redis-server.js';
import { testCachePrefix } from '../support/test-env.js';

/**
 * Corrupted values under the current generation (part 7: a corrupted key is a miss, never an
 * error, and never disables the cache): on a Redis of this spec's own, so the keys it writes
 * behind the app's back touch no other spec.
 */
describe('corrupted cache values on one Redis server are dropped, not kept as misses for good', () => {
  let redis: OwnRedis;
  let t: TestApp;
  const prefix = testCachePrefix('corrupt-entries');
  const key = (id: number): string => `res:test_widget:${id}`;

  beforeAll(async () => {
    redis = await OwnRedis.start();
    t = await startApp({ redisUrl: redis.url, cachePrefix: prefix, env: { CACHE_TIMEOUT_MS: '2000' } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await redis?.stop();
  });

  const createWidget = async (weight: number): Promise<number> =>
    (
      await t
        .http()
        .post('/v1/test/widgets')
        .send({ name: `corrupt-${randomUUID()}`, category: 'toy', weight })
        .expect(201)
    ).body.data.id as number;
  const read = async (id: number): Promise<{ weight: number; cache: string }> => {
    const response = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
    return { weight: response.body.data.weight as number, cache: response.body.meta.cache as string };
  };

  it.each([
    ['JSON that does not parse', (id: number) => `99|0|{"id":${id},`],
    ['JSON of another shape', () => '99|0|{"name":"no id"}'],
  ])(
    'an entry under the current generation whose JSON is unreadable (%s), at a version above the row, is removed by the read that meets it',
    async (_what, corrupt) => {
      const id = await createWidget(5);
      expect(await read(id)).toEqual({ weight: 5, cache: 'hit' });
      const stored = storedKeys.entry(prefix, key(id));
      const generation = await withRawRedis(redis.url, async (raw) => /^\d+:/.exec((await raw.get(stored)) ?? '')?.[0]);
      expect(generation).toBeDefined();
      await withRawRedis(redis.url, (raw) => raw.set(stored, `${generation}${corrupt(id)}`));

      // The read that meets it answers from the database and drops it (compare-and-delete) ...
      expect(await read(id)).toEqual({ weight: 5, cache: 'miss' });
      expect(await withRawRedis(redis.url, (raw) => raw.get(stored))).not.toBe(`${generation}${corrupt(id)}`);
      // ... so the refill is stored and the next read hits.
      expect(await read(id)).toEqual({ weight: 5, cache: 'hit' });
    },
  );

  it('SCRIPT FLUSH while running: writes and reads fall back to EVAL, no failed cache call, no stale read', async () => {
    const id = await createWidget(1);
    expect(await read(id)).toEqual({ weight: 1, cache: 'hit' });
    const failures = async (): Promise<number> =>
      (await t.http().get('/health/ready').expect(200)).body.data.cache_stats.failures as number;
    const before = await failures();
    const { createClient } = await import('@keyv/redis');
    const client = createClient({ url: redis.url });
    await client.connect();
    try {
      for (let weight = 2; weight <= 4; weight += 1) {
        await client.sendCommand(['SCRIPT', 'FLUSH']);
        await t.http().patch(`/v1/test/widgets/${id}`).send({ weight }).expect(200);
        expect(await read(id)).toEqual({ weight, cache: 'hit' });
      }
    } finally {
      await client.close();
    }
    expect(await failures()).toBe(before);
  });

  it('a shard generation stored with a leading zero (`05@<stamp>`) does not turn its shard into misses for good', async () => {
    const id = await createWidget(3);
    expect(await read(id)).toEqual({ weight: 3, cache: 'hit' });
    const stamp = await stampOf(redis);
    const generationKey = storedKeys.shardGeneration(prefix, shardOf(key(id)));
    await withRawRedis(redis.url, (raw) => raw.set(generationKey, `05@${stamp}`));

    // Under a new (corrupted) generation the entry counts no more: a miss, then the refill hits.
    expect(await read(id)).toEqual({ weight: 3, cache: 'miss' });
    expect(await read(id)).toEqual({ weight: 3, cache: 'hit' });
  });
});
