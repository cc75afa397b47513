import { randomUUID } from 'node:crypto';
import { ActorRateLimiter } from '../../src/platform/auth/actor-rate-limiter.js';
import { cacheKeys, shardOf, storedKeys } from '../../src/platform/cache/cache-keys.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { WRONG_TYPES, withRawRedis, type RawRedis } from '../support/redis-raw.js';
import { caller } from '../support/requests.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';

const raw = <T>(work: (redis: RawRedis) => Promise<T>): Promise<T> => withRawRedis(TEST_REDIS_URL, work);

/** The number of a stored generation (`<n>@<run id>`). */
const generationOf = (value: string | null): number => Number((value ?? '').split('@')[0]);

describe('a key of the wrong type is repaired on its next use, never disables the cache (parts 7 and 12)', () => {
  const prefix = testCachePrefix('cache-wrong-type');
  let t: TestApp;
  let root: Caller;
  let operator: Caller;
  let limiter: ActorRateLimiter;
  let device: { id: number };
  let member: { id: number };

  beforeAll(async () => {
    // A prefix of its own: this spec breaks shard generations, which every entry under them shares.
    t = await startApp({
      cachePrefix: prefix,
      widgets: false,
      env: { JOBS_SCHEMA: jobsSchema(), JOB_WORKERS: 'true' },
    });
    // The per-actor windows are added to Redis when a test says so, not every 200 ms.
    limiter = t.app.get(ActorRateLimiter);
    limiter.onModuleDestroy();
    root = await actor('super_admin');
    operator = await actor('operator');
    device = await createDevice();
    await createAuthority(device.id, operator.user.id, { permissions: ['devices.read', 'devices.update'] });
    member = await createUser({ role: 'member' });
    await caller(t, root)
      .post('/v1/admin/inbox', { user_id: member.id, type: 'notice', title: 'T', body: 'B' })
      .expect(201);
  });
  afterAll(() => t.close());

  async function health(): Promise<{ cache: unknown; failures: unknown }> {
    const { cache, cache_stats } = (await t.http().get('/health/ready').expect(200)).body.data;
    return { cache, failures: cache_stats.failures };
  }

  /** Where two reads of a route in a row came from. */
  async function twice(who: Caller, path: string): Promise<unknown[]> {
    const first = await caller(t, who).get(path).expect(200);
    const second = await caller(t, who).get(path).expect(200);
    return [first.body.meta.cache, second.body.meta.cache];
  }

  /** Renames a user; the next read of its detail and of a list that shows it has the new name. */
  async function renameIsSeen(user: { id: number; email: string }): Promise<void> {
    const name = `Renamed ${randomUUID().slice(0, 8)}`;
    await caller(t, root).patch(`/v1/admin/users/${user.id}`, { display_name: name }).expect(200);
    const detail = await caller(t, root).get(`/v1/admin/users/${user.id}`).expect(200);
    expect(detail.body.data.display_name).toBe(name);
    const list = await caller(t, root)
      .get(`/v1/admin/users?q=${encodeURIComponent(user.email)}`)
      .expect(200);
    expect(list.body.data).toEqual([expect.objectContaining({ id: user.id, display_name: name })]);
  }

  /** Every kind of cached read: a detail, a list, the auth contexts, a device authority set, counts. */
  const ROUTES = (): [Caller, string][] => [
    [root, `/v1/admin/users/${operator.user.id}`],
    [root, `/v1/admin/users?q=${encodeURIComponent(operator.user.email)}`],
    [operator, `/v1/admin/devices/${device.id}`],
    [root, `/v1/admin/message-read-state/counts?user_id=${member.id}`],
  ];
  async function readEverything(): Promise<{ data: unknown[]; cache: unknown[] }> {
    const responses = [];
    for (const [who, path] of ROUTES()) responses.push(await caller(t, who).get(path).expect(200));
    return { data: responses.map((r) => r.body.data as unknown), cache: responses.map((r) => r.body.meta.cache) };
  }

  it.each(WRONG_TYPES)(
    'a shard generation holding a %s restarts above its old value: a miss, then hits, and a write is seen',
    async (type) => {
      const user = await createUser();
      const path = `/v1/admin/users/${user.id}`;
      expect(await twice(root, path)).toEqual(['miss', 'hit']);
      const key = storedKeys.shardGeneration(prefix, shardOf(cacheKeys.resource('user', user.id)));
      const before = await raw(async (redis) => {
        const old = generationOf(await redis.get(key));
        await redis.plant(key, type);
        return old;
      });
      const { failures } = await health();
      expect(await twice(root, path)).toEqual(['miss', 'hit']);
      expect(await health()).toEqual({ cache: 'up', failures });
      expect(await raw((redis) => redis.type(key))).toBe('string');
      expect(generationOf(await raw((redis) => redis.get(key)))).toBeGreaterThan(before);
      await renameIsSeen(user);
    },
  );

  it.each(WRONG_TYPES)('an entry holding a %s is a miss and is replaced; a write after it is seen', async (type) => {
    const user = await createUser();
    const path = `/v1/admin/users/${user.id}`;
    expect(await twice(root, path)).toEqual(['miss', 'hit']);
    const key = await raw(async (redis) => {
      const stored = await redis.entryKey(prefix, cacheKeys.resource('user', user.id));
      await redis.plant(stored, type);
      return stored;
    });
    const { failures } = await health();
    expect(await twice(root, path)).toEqual(['miss', 'hit']);
    expect(await health()).toEqual({ cache: 'up', failures });
    expect(await raw((redis) => redis.type(key))).toBe('string');
    await renameIsSeen(user);
  });

  it('every entry holding a wrong type (auth contexts, details, lists, device sets, counts): the same answers, misses, then hits', async () => {
    // From an empty cache, so that every entry planted below is one these reads use again.
    expect(await t.app.get(CacheService).invalidateAll()).toBe(true);
    const expected = await readEverything();
    await readEverything(); // everything is in the cache now
    const planted = await raw(async (redis) => {
      const stored = [...(await redis.entries(prefix)).values()];
      for (const [index, key] of stored.entries())
        await redis.plant(key, WRONG_TYPES[index % WRONG_TYPES.length] ?? 'list');
      return stored;
    });
    expect(planted.length).toBeGreaterThan(5);
    const { failures } = await health();
    // Not all misses: the device check reads the device's entry (refilling it) before the handler does.
    const repaired = await readEverything();
    expect(repaired.data).toEqual(expected.data);
    expect(repaired.cache).not.toContain('bypass');
    expect(await readEverything()).toEqual({ data: expected.data, cache: ['hit', 'hit', 'hit', 'hit'] });
    const types = await raw(async (redis) => Promise.all(planted.map((key) => redis.type(key))));
    expect(types.filter((found) => found !== 'string' && found !== 'none')).toEqual([]);
    expect(await health()).toEqual({ cache: 'up', failures });
    await renameIsSeen(operator.user);
  });

  it.each(WRONG_TYPES)(
    'a table generation holding a %s restarts above its old value: its list pages miss, then hit, and a write is seen',
    async (type) => {
      const user = await createUser();
      const path = `/v1/admin/users?q=${encodeURIComponent(user.email)}`;
      expect(await twice(root, path)).toEqual(['miss', 'hit']);
      const key = storedKeys.tableGeneration(prefix, cacheKeys.tableGeneration('users'));
      const before = await raw(async (redis) => {
        const old = generationOf(await redis.get(key));
        await redis.plant(key, type);
        return old;
      });
      const { failures } = await health();
      expect(await twice(root, path)).toEqual(['miss', 'hit']);
      expect(await health()).toEqual({ cache: 'up', failures });
      expect(generationOf(await raw((redis) => redis.get(key)))).toBeGreaterThan(before);
      await renameIsSeen(user);
    },
  );

  it.each(WRONG_TYPES)(
    'a table generation holding a %s when a write bumps it: the bump lands, and the list shows the write',
    async (type) => {
      const user = await createUser();
      const path = `/v1/admin/users?q=${encodeURIComponent(user.email)}`;
      expect(await twice(root, path)).toEqual(['miss', 'hit']);
      const key = storedKeys.tableGeneration(prefix, cacheKeys.tableGeneration('users'));
      await raw((redis) => redis.plant(key, type));
      const { failures } = await health();
      await renameIsSeen(user);
      expect(await health()).toEqual({ cache: 'up', failures });
      expect(await raw((redis) => redis.type(key))).toBe('string');
      expect((await caller(t, root).get(path).expect(200)).body.meta.cache).toBe('hit');
    },
  );

  it.each(WRONG_TYPES)(
    'an actor’s request window holding a %s starts again: the limit keeps counting, the cache keeps serving',
    async (type) => {
      const who = await actor('super_admin');
      const path = `/v1/admin/users/${who.user.id}`;
      expect(await twice(who, path)).toEqual(['miss', 'hit']);
      await limiter.flush();
      const key = storedKeys.counter(prefix, cacheKeys.actorRequests(who.user.id));
      await raw((redis) => redis.plant(key, type));
      const { failures } = await health();
      await caller(t, who).get(path).expect(200);
      await limiter.flush();
      expect(await raw((redis) => redis.get(key))).toBe('1');
      expect(await health()).toEqual({ cache: 'up', failures });
      expect((await caller(t, who).get(path).expect(200)).body.meta.cache).toBe('hit');
    },
  );

  it.each(WRONG_TYPES)(
    'an address’s failed-authentication window holding a %s starts again: 401, and the cache keeps serving',
    async (type) => {
      const refused = () => t.http().get('/v1/admin/users').set('Authorization', 'Bearer not-a-token').expect(401);
      const path = `/v1/admin/users/${root.user.id}`;
      await caller(t, root).get(path).expect(200);
      await refused();
      const keys = await raw(async (redis) => {
        const found = await redis.keys(storedKeys.counter(prefix, cacheKeys.authFailures('*')));
        for (const key of found) await redis.plant(key, type);
        return found;
      });
      expect(keys.length).toBeGreaterThan(0);
      const { failures } = await health();
      await refused();
      expect(await raw(async (redis) => Promise.all(keys.map((key) => redis.get(key))))).toContain('1');
      expect(await health()).toEqual({ cache: 'up', failures });
      expect((await caller(t, root).get(path).expect(200)).body.meta.cache).toBe('hit');
    },
  );

  it.each(WRONG_TYPES)(
    'the flush after an outage (every shard generation) with one holding a %s: it lands, and every shard restarts',
    async (type) => {
      const user = await createUser();
      const path = `/v1/admin/users/${user.id}`;
      expect(await twice(root, path)).toEqual(['miss', 'hit']);
      // A shard no read has touched yet: only the flush meets it.
      const shard = (shardOf(cacheKeys.resource('user', user.id)) + 1) % 128;
      const key = storedKeys.shardGeneration(prefix, shard);
      await raw((redis) => redis.plant(key, type));
      expect(await t.app.get(CacheService).invalidateAll()).toBe(true);
      expect(await raw((redis) => redis.type(key))).toBe('string');
      expect(await twice(root, path)).toEqual(['miss', 'hit']);
      expect((await health()).cache).toBe('up');
    },
  );

  it('POST /cache/rebuild with entries and a table generation holding wrong types: the job succeeds, reads stay right', async () => {
    const expected = await readEverything();
    await readEverything();
    const planted = await raw(async (redis) => {
      const stored = [...(await redis.entries(prefix))]
        .filter(([logical]) => Object.values(cacheKeys.prefixes).some((kind) => logical.startsWith(kind)))
        .map(([, key]) => key);
      stored.push(storedKeys.tableGeneration(prefix, cacheKeys.tableGeneration('users')));
      for (const [index, key] of stored.entries())
        await redis.plant(key, WRONG_TYPES[index % WRONG_TYPES.length] ?? 'list');
      return stored;
    });
    expect(planted.length).toBeGreaterThan(5);
    const { failures } = await health();
    const accepted = await caller(t, root).post('/v1/admin/cache/rebuild', { scope: 'all' }).expect(202);
    const job = await waitForJob(t, root.auth, accepted.body.data.job_id as string, 60_000);
    expect(job).toMatchObject({ state: 'succeeded', result: { scope: 'all' } });
    const types = await raw(async (redis) => Promise.all(planted.map((key) => redis.type(key))));
    expect(types.filter((found) => found !== 'string' && found !== 'none')).toEqual([]);
    const after = await readEverything();
    expect(after.data).toEqual(expected.data);
    expect(after.cache).not.toContain('bypass');
    expect((await readEverything()).cache).toEqual(['hit', 'hit', 'hit', 'hit']);
    expect(await health()).toEqual({ cache: 'up', failures });
  }, 90_000);
});
