import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { freePort, OwnRedis } from '../support/redis-server.js';
import { caller } from '../support/requests.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { testCachePrefix } from '../support/test-env.js';

/**
 * The budget must not cost freshness: an independent review found that once a request's reads had
 * spent it on a Redis that answers slowly, its write's rebuild was skipped, and another instance
 * next to Redis served the replaced entry as a hit until its epoch poll.
 */
describe('a Redis that answers 30 ms late to one instance: a write there is read fresh on another at once', () => {
  let redis: OwnRedis;
  let proxy: TcpProxy;
  let far: TestApp;
  let near: TestApp;
  let root: Caller;
  beforeAll(async () => {
    redis = await OwnRedis.start();
    proxy = new TcpProxy('127.0.0.1', Number(new URL(redis.url).port), await freePort(), 30);
    await proxy.open();
    const cachePrefix = testCachePrefix('cache-far');
    // Production's cache budget; an epoch poll of a minute, so only the write's own work keeps `near` fresh.
    const env = { AFTER_COMMIT_TIMEOUT_MS: '1000', CACHE_EPOCH_POLL_MS: '60000' };
    far = await startApp({ redisUrl: `redis://127.0.0.1:${proxy.port}`, widgets: false, cachePrefix, env });
    near = await startApp({ redisUrl: redis.url, widgets: false, cachePrefix, env });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await Promise.all([far?.close(), near?.close()]);
    await proxy?.cut();
    await redis?.stop();
  });

  it('the near instance never serves the entry a write on the far one replaced', async () => {
    const target = await createUser({ role: 'operator' });
    const hit = async (): Promise<string> =>
      (await caller(near, root).get(`/v1/admin/users/${target.id}`).expect(200)).body.meta.cache as string;
    let cache = await hit();
    for (let n = 0; n < 5 && cache !== 'hit'; n += 1) cache = await hit();
    expect(cache).toBe('hit');
    for (let n = 1; n <= 3; n += 1) {
      await caller(far, root)
        .patch(`/v1/admin/users/${target.id}`, { display_name: `Far ${n}` })
        .expect(200);
      const read = await caller(near, root).get(`/v1/admin/users/${target.id}`).expect(200);
      expect(read.body.data.display_name).toBe(`Far ${n}`);
    }
  });
});
