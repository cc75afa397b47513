import { shardOf, storedKeys } from '../../src/platform/cache/cache-keys.js';
import { startApp, type TestApp } from '../support/app.js';
import { withRawRedis } from '../support/redis-raw.js';
import { freePort, OwnRedis } from '../support/redis-server.js';
import { command, field, follow, portOf, replicated, stampOf } from '../support/redis-replication.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { testCachePrefix } from '../support/test-env.js';

/**
 * Part 12 on one Redis server: the service knows one address (a proxy of this test's), and what is
 * behind it changes from a master to its promoted replica. The cluster's version of this is
 * redis-cluster-failover.spec.ts.
 */
describe('one Redis server fails over to its replica (a master and a replica of our own, behind a proxy)', () => {
  let master: OwnRedis; // A
  let replica: OwnRedis; // B
  let proxy: TcpProxy;
  let a: TestApp;
  let c: TestApp | undefined;
  const prefix = testCachePrefix('single-failover');

  const key = (id: number): string => `res:test_widget:${id}`;
  const entryKey = (id: number): string => storedKeys.entry(prefix, key(id));
  const generationKey = (id: number): string => storedKeys.shardGeneration(prefix, shardOf(key(id)));

  const start = (): Promise<TestApp> =>
    startApp({
      redisUrl: `redis://127.0.0.1:${proxy.port}`,
      cachePrefix: prefix,
      // Room for a loaded machine: a read past its budget answers `bypass` where a hit or a miss is expected.
      env: { CACHE_TIMEOUT_MS: '2000' },
    });

  const createWidget = async (weight: number): Promise<number> =>
    (await a.http().post('/v1/test/widgets').send({ name: 'single-failover', category: 'part', weight }).expect(201))
      .body.data.id as number;

  const read = async (t: TestApp, id: number): Promise<{ weight: number; cache: string }> => {
    const response = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
    return { weight: response.body.data.weight as number, cache: response.body.meta.cache as string };
  };

  beforeAll(async () => {
    [master, replica] = await Promise.all([OwnRedis.start(), OwnRedis.start()]);
    await follow(replica, master);
    // B acknowledges only once it is linked and its first sync is done.
    await replicated(master);
    proxy = new TcpProxy('127.0.0.1', portOf(master), await freePort());
    await proxy.open();
    a = await start();
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.close(), c?.close()]);
    await proxy?.cut();
    await Promise.all([master?.stop(), replica?.stop()]);
  });

  it('an invalidation the old master acknowledged and lost with it is never undone by the promoted replica', async () => {
    // Two widgets in different shards, so that each instance below meets a generation of A's by itself.
    const x = await createWidget(1);
    let y = await createWidget(1);
    for (let n = 0; n < 10 && shardOf(key(y)) === shardOf(key(x)); n += 1) y = await createWidget(1);
    expect(shardOf(key(y))).not.toBe(shardOf(key(x)));
    for (const id of [x, y]) {
      await read(a, id);
      expect(await read(a, id)).toEqual({ weight: 1, cache: 'hit' });
    }
    const stampA = await stampOf(master);
    // B holds both entries at version 1 once it has acknowledged everything A has.
    await replicated(master);
    expect(
      await withRawRedis(replica.url, async (redis) =>
        (await Promise.all([x, y].map((id) => redis.get(entryKey(id))))).map((raw) => /^\d+:1\|0\|/.test(raw ?? '')),
      ),
    ).toEqual([true, true]);

    // B stops taking the stream. A frozen process still receives into its socket buffer: the link is
    // cut too, so what A acknowledges from now on reaches B not at all.
    replica.pause();
    await command(master, 'CLIENT', 'KILL', 'TYPE', 'replica');
    for (const id of [x, y]) {
      await a.http().patch(`/v1/test/widgets/${id}`).send({ weight: 2 }).expect(200);
      expect(await read(a, id)).toEqual({ weight: 2, cache: 'hit' });
    }

    // A dies with the only copy of both rebuilds; B is promoted.
    await master.stop();
    replica.resume();
    await command(replica, 'REPLICAOF', 'NO', 'ONE');
    expect(field(await command(replica, 'INFO', 'replication'), 'role')).toBe('master');
    const stampB = await stampOf(replica);
    expect(stampB).toMatch(/^\w{80}$/);
    expect(stampB).not.toBe(stampA);

    // B still holds both entries at version 1 (weight 1), under the generation A wrote.
    const stale = await withRawRedis(replica.url, (redis) =>
      Promise.all(
        [x, y].map(async (id) => ({
          entry: await redis.get(entryKey(id)),
          generation: await redis.get(generationKey(id)),
        })),
      ),
    );
    const oldGenerations = stale.map(({ entry, generation }) => {
      const [, n, json] = /^(\d+):1\|0\|(.*)$/s.exec(entry ?? '') ?? [];
      expect(n).toBeDefined();
      expect((JSON.parse(json ?? 'null') as { weight?: number } | null)?.weight).toBe(1);
      expect(generation).toBe(`${n}@${stampA}`);
      return Number(n);
    });

    // The proxy's address now leads to B (a new proxy on the same port); the old connections are
    // severed and the app's client reconnects through it. Reads wait until B has answered its
    // handshake: one refused meanwhile would count as an outage and drop the whole cache, which
    // would hide what is tested here (the cache_stats below show none happened).
    await proxy.cut();
    proxy = new TcpProxy('127.0.0.1', portOf(replica), proxy.port);
    await proxy.open();
    await proxy.firstAnswer();

    // Weight 1 is never served again: x's entry counts no more (a miss), then the refill hits.
    expect(await read(a, x)).toEqual({ weight: 2, cache: 'miss' });
    expect(await read(a, x)).toEqual({ weight: 2, cache: 'hit' });
    // An instance started now, that has seen no failover at all, meets A's generation in y's shard.
    c = await start();
    expect(await read(c, y)).toEqual({ weight: 2, cache: 'miss' });
    expect(await read(c, y)).toEqual({ weight: 2, cache: 'hit' });
    expect(await read(a, y)).toEqual({ weight: 2, cache: 'hit' });
    expect(await read(c, x)).toEqual({ weight: 2, cache: 'hit' });

    // Both shards' generations restarted above A's, under B's stamp.
    const restarted = await withRawRedis(replica.url, (redis) =>
      Promise.all([x, y].map((id) => redis.get(generationKey(id)))),
    );
    restarted.forEach((generation, index) => {
      const [, n, owner] = /^(\d+)@(\w+)$/.exec(generation ?? '') ?? [];
      expect(owner).toBe(stampB);
      expect(Number(n)).toBeGreaterThan(oldGenerations[index] ?? Number.POSITIVE_INFINITY);
    });
    // Neither instance saw a failed cache call: the misses come from the stamp, not from a flush.
    for (const t of [a, c]) {
      const stats = (await t.http().get('/health/ready').expect(200)).body.data.cache_stats as { failures: number };
      expect(stats.failures).toBe(0);
    }
  }, 60_000);
});
