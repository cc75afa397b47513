import { shardOf, storedKeys } from '../../src/platform/cache/cache-keys.js';
import { startApp, type TestApp } from '../support/app.js';
import { withRawRedis } from '../support/redis-raw.js';
import { command, field, follow, portOf, replicated, stampOf } from '../support/redis-replication.js';
import { freePort, OwnRedis } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { testCachePrefix } from '../support/test-env.js';

const key = (id: number): string => `res:test_widget:${id}`;

/** The stored generation of `id`'s shard, on `redis`: its number and its stamp. */
async function generationOn(redis: OwnRedis, prefix: string, id: number): Promise<{ n: number; stamp: string }> {
  const raw = await withRawRedis(redis.url, (raw) => raw.get(storedKeys.shardGeneration(prefix, shardOf(key(id)))));
  const [, n, stamp] = /^(\d+)@(\w+)$/.exec(raw ?? '') ?? [];
  return { n: Number(n), stamp: stamp ?? '' };
}

/**
 * Part 12 on one Redis server, the way back: the old master, demoted and resynced from the replica
 * that replaced it, is promoted again. Same process, same run id: only its replication id tells
 * that its data is no longer the history it stamped its generations in.
 */
describe('one Redis server fails over and back (a master and a replica of our own, behind a proxy)', () => {
  let a: OwnRedis;
  let b: OwnRedis;
  let proxy: TcpProxy;
  /** B's replication link to A: cut, B hears nothing more from A. */
  let link: TcpProxy;
  let app: TestApp;
  const prefix = testCachePrefix('single-failback');

  const read = async (id: number): Promise<{ weight: number; cache: string }> => {
    const response = await app.http().get(`/v1/test/widgets/${id}`).expect(200);
    return { weight: response.body.data.weight as number, cache: response.body.meta.cache as string };
  };

  /** The proxy's address leads to `to` from now on; reads wait until it has answered a handshake. */
  const point = async (to: OwnRedis): Promise<void> => {
    await proxy.cut();
    proxy = new TcpProxy('127.0.0.1', portOf(to), proxy.port);
    await proxy.open();
    await proxy.firstAnswer();
  };

  beforeAll(async () => {
    [a, b] = await Promise.all([OwnRedis.start(), OwnRedis.start()]);
    link = new TcpProxy('127.0.0.1', portOf(a), await freePort());
    await link.open();
    await follow(b, a, link.port);
    await replicated(a);
    proxy = new TcpProxy('127.0.0.1', portOf(a), await freePort());
    await proxy.open();
    app = await startApp({
      redisUrl: `redis://127.0.0.1:${proxy.port}`,
      cachePrefix: prefix,
      env: { CACHE_TIMEOUT_MS: '2000' },
    });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await Promise.all([proxy?.cut(), link?.cut()]);
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('an invalidation A acknowledged and lost stays lost after A is promoted back: its old generation counts no more', async () => {
    const id = (
      await app.http().post('/v1/test/widgets').send({ name: 'failback', category: 'part', weight: 1 }).expect(201)
    ).body.data.id as number;
    await read(id);
    expect(await read(id)).toEqual({ weight: 1, cache: 'hit' });
    const runIdA = field(await command(a, 'INFO', 'server'), 'run_id');
    const before = await generationOn(a, prefix, id);
    expect(before.stamp).toBe(await stampOf(a));
    await replicated(a);

    // B's link to A is cut: A acknowledges the write (and its invalidation) alone.
    await link.cut();
    await app.http().patch(`/v1/test/widgets/${id}`).send({ weight: 2 }).expect(200);
    expect(await read(id)).toEqual({ weight: 2, cache: 'hit' });

    // B is promoted and A, alive, becomes its replica: A's data is now B's, with A's old generation
    // and the entry at weight 1 (nothing read that shard while B was the master).
    await command(b, 'REPLICAOF', 'NO', 'ONE');
    await point(b);
    await follow(a, b);
    await replicated(b);
    expect(field(await command(a, 'INFO', 'replication'), 'master_link_status')).toBe('up');

    // A is promoted back: the same process.
    await command(a, 'REPLICAOF', 'NO', 'ONE');
    await point(a);
    expect(field(await command(a, 'INFO', 'server'), 'run_id')).toBe(runIdA);
    const stale = await generationOn(a, prefix, id);
    expect(stale).toEqual(before);
    expect(
      await withRawRedis(a.url, (raw) => raw.get(storedKeys.entry(prefix, key(id)))).then((raw) =>
        raw?.startsWith(`${before.n}:1|0|`),
      ),
    ).toBe(true);

    // Weight 1 is never served: the generation restarts under A's new stamp, a miss, then hits.
    expect(await read(id)).toEqual({ weight: 2, cache: 'miss' });
    expect(await read(id)).toEqual({ weight: 2, cache: 'hit' });
    const restarted = await generationOn(a, prefix, id);
    expect(restarted.stamp).toBe(await stampOf(a));
    expect(restarted.stamp).not.toBe(before.stamp);
    expect(restarted.n).toBeGreaterThan(before.n);
  }, 60_000);
});

/**
 * A master's replication id changes when its first replica attaches, on the same connection: an
 * instance that learned the old stamp and one that learned the new must not restart each other's
 * generations back and forth (every restart turns a whole shard into misses).
 */
describe('a first replica attaches to the Redis server two instances share', () => {
  let master: OwnRedis;
  let replica: OwnRedis;
  const prefix = testCachePrefix('first-replica');
  const apps: TestApp[] = [];

  beforeAll(async () => {
    [master, replica] = await Promise.all([OwnRedis.start(), OwnRedis.start()]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await Promise.all([master?.stop(), replica?.stop()]);
  });

  it('the instance that knew the old stamp adopts the new one; the generation restarts once and stays', async () => {
    const start = async (): Promise<TestApp> => {
      const app = await startApp({ redisUrl: master.url, cachePrefix: prefix, env: { CACHE_TIMEOUT_MS: '2000' } });
      apps.push(app);
      return app;
    };
    const read = async (app: TestApp, id: number): Promise<string> =>
      (await app.http().get(`/v1/test/widgets/${id}`).expect(200)).body.meta.cache as string;

    const early = await start();
    const id = (
      await early
        .http()
        .post('/v1/test/widgets')
        .send({ name: 'first-replica', category: 'part', weight: 1 })
        .expect(201)
    ).body.data.id as number;
    await read(early, id);
    expect(await read(early, id)).toBe('hit');
    const alone = await generationOn(master, prefix, id);

    await follow(replica, master);
    await replicated(master);
    const newStamp = await stampOf(master);
    expect(newStamp).not.toBe(alone.stamp);
    expect(newStamp.slice(0, 40)).toBe(alone.stamp.slice(0, 40));

    // A new instance learns the new stamp: the old generation is not its server's any more, once.
    const late = await start();
    expect(await read(late, id)).toBe('miss');
    expect(await read(late, id)).toBe('hit');
    const settled = await generationOn(master, prefix, id);
    expect(settled.stamp).toBe(newStamp);

    // Both instances, in turn: every read a hit, and the generation never moves again.
    for (let round = 0; round < 3; round += 1) {
      expect(await read(early, id)).toBe('hit');
      expect(await read(late, id)).toBe('hit');
    }
    expect(await generationOn(master, prefix, id)).toEqual(settled);
  }, 60_000);
});
