import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { caller } from '../support/requests.js';
import { withRawRedis } from '../support/redis-raw.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';

/*
 * The authentication hook's check of a prefetched entry (`CacheAside.hit`, the route's own check) must accept only
 * what the route's cache-aside read accepts (`objectOf({ id: 'number' })` and the same id): else
 * the hook sends an entry the route would have dropped and reloaded. Ids are JSON integers,
 * never strings (part 1).
 */
describe('a cached detail answered by the hook is one the route would send', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('stored-details-edges'),
      env: { CACHE_TIMEOUT_MS: '2000' },
    });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('an entry whose id is the record’s id as a string is not sent: the route reloads the record', async () => {
    const user = await createUser();
    const path = `/v1/admin/users/${user.id}`;
    const expected = (await caller(t, root).get(path).expect(200)).body.data as unknown;
    await withRawRedis(TEST_REDIS_URL, async (redis) => {
      const stored = await redis.entryKey(testCachePrefix('stored-details-edges'), `res:user:${user.id}`);
      const value = (await redis.get(stored)) ?? '';
      const generation = /^\d+:/.exec(value)?.[0] ?? '';
      await redis.set(stored, `${generation}999|0|${JSON.stringify({ ...(expected as object), id: String(user.id) })}`);
    });
    const read = await caller(t, root).get(path).expect(200);
    expect(read.body.data).toEqual(expected);
    expect(typeof read.body.data.id).toBe('number');
  });
});

describe('the hook’s answer and the route’s agree on headers, paths and logging', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('stored-details-cors'),
      env: { CACHE_TIMEOUT_MS: '2000', CORS_ORIGINS: 'https://portal.example.com' },
    });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const headersOf = (response: { headers: Record<string, string> }) => {
    const { date: _date, 'x-request-id': _id, 'content-length': _length, ...rest } = response.headers;
    return rest;
  };

  it('a browser’s request, a trailing slash and a percent-encoded id: the same headers and body as the route', async () => {
    const user = await createUser();
    const path = `/v1/admin/users/${user.id}`;
    await caller(t, root).get(path).expect(200);
    const get = (url: string) =>
      caller(t, root).get(url).set('Origin', 'https://portal.example.com').set('X-Request-Id', 'r2-same').expect(200);
    const routed = await get(`${path}?include_deleted=false`);
    const digits = String(user.id);
    for (const url of [path, `${path}/`, `/v1/admin/users/%${digits.charCodeAt(0).toString(16)}${digits.slice(1)}`]) {
      const fast = await get(url);
      expect(headersOf(fast)).toEqual(headersOf(routed));
      expect(fast.text).toBe(routed.text);
    }
  });

  it('HEAD is the route’s (no body, the same ETag)', async () => {
    const user = await createUser();
    const path = `/v1/admin/users/${user.id}`;
    const get = await caller(t, root).get(path).expect(200);
    const head = await t.http().head(path).set('Authorization', root.auth).expect(200);
    expect(head.headers.etag).toBe(get.headers.etag);
    expect(head.text ?? '').toBe('');
  });

  it('a suspended user, a revoked session and a role without the permission are refused as by the route', async () => {
    const user = await createUser();
    const path = `/v1/admin/users/${user.id}`;
    await caller(t, root).get(path).expect(200);
    const viewer = await actor('viewer');
    const viewerRead = await caller(t, viewer).get(path);
    const viewerRouted = await caller(t, viewer).get(`${path}?include_deleted=false`);
    expect(viewerRead.status).toBe(viewerRouted.status);
    const suspended = await actor('super_admin');
    await caller(t, root).post(`/v1/admin/users/${suspended.user.id}/suspend`, { reason: 'r2' });
    expect((await caller(t, suspended).get(path)).status).toBe(401);
  });
});
