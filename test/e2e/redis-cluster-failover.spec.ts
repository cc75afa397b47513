import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { shardOf, storedKeys } from '../../src/platform/cache/cache-keys.js';
import { startApp, type TestApp } from '../support/app.js';
import { createOwnDatabase } from '../support/own-database.js';
import { hashSlot, startRedisCluster, type RedisCluster } from '../support/redis-cluster.mjs';
import { withRawRedis } from '../support/redis-raw.js';
import { testCachePrefix } from '../support/test-env.js';

/** Part 12: a node failover loses at most cache entries, never correctness. */
describe('Redis Cluster: a master dies (3 masters, 3 replicas of our own)', () => {
  let cluster: RedisCluster;
  let database: { url: string; drop: () => Promise<void> };
  let a: TestApp;
  let b: TestApp;
  const prefix = testCachePrefix('failover');
  const tag = randomUUID().slice(0, 8);

  /** The hash slot that holds a widget's detail entry (its shard's). */
  const slotOf = (id: number): number => hashSlot(storedKeys.shardGeneration(prefix, shardOf(`res:test_widget:${id}`)));

  const createWidget = async (weight: number): Promise<number> =>
    (
      await a
        .http()
        .post('/v1/test/widgets')
        .send({ name: `fo-${tag}`, category: 'part', weight })
        .expect(201)
    ).body.data.id as number;

  const read = async (t: TestApp, id: number): Promise<{ weight: number; cache: string }> => {
    const response = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
    return { weight: response.body.data.weight as number, cache: response.body.meta.cache as string };
  };

  const start = (): Promise<TestApp> =>
    startApp({
      redisUrl: cluster.url,
      databaseUrl: database.url,
      cachePrefix: prefix,
      env: { RATE_LIMIT_PER_MINUTE: '1000000', CACHE_TIMEOUT_MS: '200', CACHE_EPOCH_POLL_MS: '1000' },
    });

  /** A read once the app uses the cache again (its first calls after a failover re-read the slot map). */
  const readOnceBack = async (t: TestApp, id: number): Promise<{ weight: number; cache: string }> => {
    let answer = await read(t, id);
    for (let n = 0; n < 50 && answer.cache === 'bypass'; n += 1) {
      await sleep(100);
      answer = await read(t, id);
    }
    return answer;
  };

  beforeAll(async () => {
    // A database of its own: a write whose invalidation is lost moves the database's cache epoch,
    // which the instances here follow at the default pace (other specs' instances must not).
    [cluster, database] = await Promise.all([startRedisCluster(), createOwnDatabase('failover', { widgets: true })]);
    [a, b] = await Promise.all([start(), start()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await cluster?.stop();
    await database?.drop();
  });

  it('an invalidation its master acknowledged and lost with it is never undone by the promoted replica', async () => {
    const id = await createWidget(1);
    await read(a, id);
    expect(await read(b, id)).toEqual({ weight: 1, cache: 'hit' });
    const slot = slotOf(id);
    // The replicas stop taking the stream: the master acknowledges the rebuild below, they never see it.
    const frozen = await cluster.freezeReplicasOf(slot);
    await a.http().patch(`/v1/test/widgets/${id}`).send({ weight: 2 }).expect(200);
    expect(await read(b, id)).toEqual({ weight: 2, cache: 'hit' });
    await cluster.killMasterOf(slot);
    cluster.thaw(frozen);
    const promoted = await cluster.waitForSlot(slot);
    // The promoted replica still holds the entry at weight 1 (the version before the write) ...
    const stale = await withRawRedis(`redis+cluster://127.0.0.1:${promoted}`, async (redis) => {
      const generation = await redis.get(storedKeys.shardGeneration(prefix, shardOf(`res:test_widget:${id}`)));
      const keys = [storedKeys.entry(prefix, `res:test_widget:${id}`)];
      return { generation, entries: await Promise.all(keys.map((key) => redis.get(key))) };
    });
    expect(stale.entries.some((entry) => /^\d+:1\|0\|/.test(entry ?? ''))).toBe(true);
    // ... but under a generation another server wrote. An instance that starts now has seen no
    // failure (it would otherwise drop the whole cache first): its first read is a miss all the same.
    const c = await start();
    try {
      expect(await read(c, id)).toEqual({ weight: 2, cache: 'miss' });
      expect(await read(c, id)).toEqual({ weight: 2, cache: 'hit' });
    } finally {
      await c.close();
    }
    expect((await readOnceBack(a, id)).weight).toBe(2);
    expect((await readOnceBack(b, id)).weight).toBe(2);
  }, 60_000);

  it('a master killed mid-traffic: every request answers, none is stale, and the cache is back once the replica is promoted', async () => {
    const ids = await Promise.all(Array.from({ length: 12 }, () => createWidget(0)));
    // A master that still has a replica (not the one the test above promoted).
    const masters = await Promise.all(ids.map(async (id) => cluster.masterOf(slotOf(id))));
    const withReplica = new Set(await cluster.mastersWithReplicas());
    const victim = ids.find((_, index) => withReplica.has(masters[index] ?? 0));
    if (victim === undefined) throw new Error('no widget entry on a master with a replica');
    const victimSlot = slotOf(victim);
    const acked = new Map(ids.map((id) => [id, 0]));
    const stale: string[] = [];
    const failures: string[] = [];
    const caches: { at: number; cache: string }[] = [];
    let running = true;
    let killedAt = Number.POSITIVE_INFINITY;

    // One writer per widget (its weight only grows), reads of it on the other instance in between:
    // a read that starts after a write's response must show that write or a later one.
    const traffic = ids.map(async (id, index) => {
      const [writer, reader] = index % 2 === 0 ? [a, b] : [b, a];
      while (running) {
        const weight = (acked.get(id) ?? 0) + 1;
        const written = await writer.http().patch(`/v1/test/widgets/${id}`).send({ weight });
        if (written.status !== 200) failures.push(`PATCH ${id}: ${written.status}`);
        else acked.set(id, weight);
        const floor = acked.get(id) ?? 0;
        const response = await reader.http().get(`/v1/test/widgets/${id}`);
        if (response.status !== 200) failures.push(`GET ${id}: ${response.status}`);
        else {
          caches.push({ at: Date.now(), cache: response.body.meta.cache as string });
          if ((response.body.data.weight as number) < floor)
            stale.push(
              `widget ${id}: read ${response.body.data.weight} (${response.body.meta.cache}) after ${floor} was answered, ${Date.now() - killedAt} ms after the kill`,
            );
        }
        const list = await reader.http().get(`/v1/test/widgets?q=fo-${tag}&page_size=100&sort=id:asc`);
        if (list.status !== 200) failures.push(`list: ${list.status}`);
        else {
          const row = (list.body.data as { id: number; weight: number }[]).find((item) => item.id === id);
          if (row === undefined || row.weight < floor)
            stale.push(`list: widget ${id} at ${row?.weight} after ${floor}`);
        }
      }
    });
    await sleep(1000);
    killedAt = Date.now();
    await cluster.killMasterOf(victimSlot);
    await cluster.waitForSlot(victimSlot);
    const promotedAt = Date.now();
    await sleep(3000);
    running = false;
    await Promise.all(traffic);

    expect(failures).toEqual([]);
    expect(stale).toEqual([]);
    // Reads went on while the slot moved (served from the database) ...
    expect(caches.filter(({ at }) => at > killedAt && at < promotedAt).length).toBeGreaterThan(0);
    // ... and the cache answers again after the promotion.
    expect(caches.filter(({ at, cache }) => at > promotedAt + 1500 && cache === 'hit').length).toBeGreaterThan(0);
  }, 90_000);
});
