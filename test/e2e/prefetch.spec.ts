import { createClient } from '@keyv/redis';
import { ActorRateLimiter } from '../../src/platform/auth/actor-rate-limiter.js';
import { actor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { createDevice } from '../support/devices.js';
import { OwnRedis } from '../support/redis-server.js';

/**
 * The commands the Redis server ran while `work` ran (`INFO commandstats`), by name, without the
 * INFO calls of this count itself.
 */
async function commandsDuring(url: string, work: () => Promise<void>): Promise<Record<string, number>> {
  const client = createClient({ url });
  await client.connect();
  try {
    const stats = async (): Promise<Map<string, number>> =>
      new Map(
        [...(await client.info('commandstats')).matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)].map(([, name, calls]) => [
          name ?? '',
          Number(calls),
        ]),
      );
    const before = await stats();
    await work();
    const after = await stats();
    const ran: Record<string, number> = {};
    for (const [name, calls] of after)
      if (name !== 'info' && calls !== (before.get(name) ?? 0)) ran[name] = calls - (before.get(name) ?? 0);
    return ran;
  } finally {
    await client.close();
  }
}

/*
 * A cached detail route names its projection (`@Authorize({ prefetch })`); the guard fetches it
 * with the auth context in one round trip and hands it to the handler (`@PrefetchedEntries()`),
 * so a cached detail read costs Redis one plain MGET. On a Redis of this spec's own, so that nothing
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
  ])('GET of a cached %s: one MGET, a hit, the same body', async (_name, make, path) => {
    const url = path(await make());
    const first = await t.http().get(url).set('Authorization', viewer.auth).expect(200);
    const second = await t.http().get(url).set('Authorization', viewer.auth).expect(200);
    expect(second.body.meta.cache).toBe('hit');
    let third: { body: { data: unknown; meta: { cache: string } } } | undefined;
    const commands = await commandsDuring(redis.url, async () => {
      third = await t.http().get(url).set('Authorization', viewer.auth).expect(200);
    });
    expect(third?.body.meta.cache).toBe('hit');
    expect(third?.body.data).toEqual(first.body.data);
    // One plain MGET (session, user, entry and their shards' generations): no script, no INFO.
    expect(commands).toEqual({ mget: 1 });
  });
});
