import { createClient } from '@keyv/redis';
import { ActorRateLimiter } from '../../src/platform/auth/actor-rate-limiter.js';
import { actor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { createDevice } from '../support/devices.js';
import { OwnRedis } from '../support/redis-server.js';

/**
 * Script calls the Redis server ran while `work` ran (`INFO commandstats`). Every read of the
 * store is one script call (whatever it reads inside), so this is the number of round trips.
 */
async function scriptCallsDuring(url: string, work: () => Promise<void>): Promise<number> {
  const client = createClient({ url });
  await client.connect();
  try {
    const scripts = async (): Promise<number> =>
      [...(await client.info('commandstats')).matchAll(/^cmdstat_(?:eval|evalsha|fcall):calls=(\d+)/gm)].reduce(
        (sum, [, calls]) => sum + Number(calls),
        0,
      );
    const before = await scripts();
    await work();
    return (await scripts()) - before;
  } finally {
    await client.close();
  }
}

/*
 * A cached detail route names its projection (`@Authorize({ prefetch })`); the guard fetches it
 * with the auth context in one round trip and hands it to the handler (`@PrefetchedEntries()`),
 * so a cached detail read costs Redis one call. On a Redis of this spec's own, so that nothing
 * else is counted.
 */
describe('a cached detail read costs one Redis call (the prefetch is passed to the handler)', () => {
  let redis: OwnRedis;
  let t: TestApp;
  let viewer: Caller;
  beforeAll(async () => {
    redis = await OwnRedis.start();
    t = await startApp({ redisUrl: redis.url, widgets: false, env: { CACHE_TIMEOUT_MS: '2000' } });
    // The per-actor limit adds its counts to Redis every 200 ms, off the request path: stopped
    // here, so that only the requests' own calls are counted.
    t.app.get(ActorRateLimiter).onModuleDestroy();
    viewer = await actor('viewer');
  });
  afterAll(async () => {
    await t.close();
    await redis.stop();
  });

  it.each([
    ['user', () => Promise.resolve(viewer.user.id), (id: number) => `/v1/admin/users/${id}`],
    ['device', async () => (await createDevice()).id, (id: number) => `/v1/admin/devices/${id}`],
  ])('GET of a cached %s: one call, a hit, the same body', async (_name, make, path) => {
    const url = path(await make());
    const first = await t.http().get(url).set('Authorization', viewer.auth).expect(200);
    const second = await t.http().get(url).set('Authorization', viewer.auth).expect(200);
    expect(second.body.meta.cache).toBe('hit');
    let third: { body: { data: unknown; meta: { cache: string } } } | undefined;
    const calls = await scriptCallsDuring(redis.url, async () => {
      third = await t.http().get(url).set('Authorization', viewer.auth).expect(200);
    });
    expect(third?.body.meta.cache).toBe('hit');
    expect(third?.body.data).toEqual(first.body.data);
    expect(calls).toBe(1);
  });
});
