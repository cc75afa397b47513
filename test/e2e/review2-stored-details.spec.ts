import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { caller } from '../support/requests.js';
import { withRawRedis } from '../support/redis-raw.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';

/*
 * Review 2: the authentication hook's check of a prefetched entry (`readsBack`) must accept only
 * what the route's cache-aside read accepts (`objectOf({ id: 'number' })` and the same id): else
 * the hook sends an entry the route would have dropped and reloaded. Ids are JSON integers,
 * never strings (part 1).
 */
describe('review2: a cached detail answered by the hook is one the route would send', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { CACHE_TIMEOUT_MS: '2000' } });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('an entry whose id is the record’s id as a string is not sent: the route reloads the record', async () => {
    const user = await createUser();
    const path = `/v1/admin/users/${user.id}`;
    const expected = (await caller(t, root).get(path).expect(200)).body.data as unknown;
    await withRawRedis(TEST_REDIS_URL, async (redis) => {
      const stored = await redis.entryKey(testCachePrefix(), `res:user:${user.id}`);
      const value = (await redis.get(stored)) ?? '';
      const generation = /^\d+:/.exec(value)?.[0] ?? '';
      await redis.set(stored, `${generation}999|0|${JSON.stringify({ ...(expected as object), id: String(user.id) })}`);
    });
    const read = await caller(t, root).get(path).expect(200);
    expect(read.body.data).toEqual(expected);
    expect(typeof read.body.data.id).toBe('number');
  });
});
