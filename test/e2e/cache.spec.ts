import { randomUUID } from 'node:crypto';
import { withRawRedis, type RawRedis } from '../support/redis-raw.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { OwnRedis } from '../support/redis-server.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';
import { WidgetsService } from '../support/widgets/widgets.service.js';

async function createWidget(t: TestApp, weight = 1): Promise<number> {
  const response = await t
    .http()
    .post('/v1/test/widgets')
    .send({ name: `cache-${randomUUID()}`, category: 'toy', weight })
    .expect(201);
  return response.body.data.id as number;
}

/** Runs `work` on the Redis key behind a widget's detail entry (in the current generation). */
async function withEntryKey<T>(
  url: string,
  id: number,
  work: (redis: RawRedis, key: string) => Promise<T>,
): Promise<T> {
  return withRawRedis(url, async (redis) =>
    work(redis, await redis.entryKey(testCachePrefix(), `res:test_widget:${id}`)),
  );
}

/** The raw entry, straight from Redis, without the generation it is stored under. */
const redisEntry = (url: string, id: number) =>
  withEntryKey(url, id, async (client, key) => (await client.get(key))?.replace(/^\d+:/, ''));

/** Overwrites the entry behind the app's back, under its shard's current generation. */
const writeEntry = (url: string, id: number, value: string) =>
  withEntryKey(url, id, async (client, key) =>
    client.set(key, `${/^\d+:/.exec((await client.get(key)) ?? '')?.[0]}${value}`),
  );

/** Removes the entry behind the app's back, so the next read is a miss. */
const dropEntry = (url: string, id: number) => withEntryKey(url, id, (client, key) => client.del(key));

describe('cache-aside against real Redis', () => {
  let t: TestApp;
  let widgets: WidgetsService;
  beforeAll(async () => {
    t = await startApp();
    widgets = t.app.get(WidgetsService);
  });
  afterAll(() => t.close());

  it('reports hit after the write rebuilt the entry, and stores the version with the JSON', async () => {
    const id = await createWidget(t);
    const first = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
    expect(first.body.meta.cache).toBe('hit');
    expect(await redisEntry(TEST_REDIS_URL, id)).toMatch(new RegExp(`^1\\|0\\|\\{"id":${id},`));
  });

  it('reports miss when the entry is gone, then hit', async () => {
    const id = await createWidget(t);
    await dropEntry(TEST_REDIS_URL, id);
    expect((await t.http().get(`/v1/test/widgets/${id}`).expect(200)).body.meta.cache).toBe('miss');
    expect((await t.http().get(`/v1/test/widgets/${id}`).expect(200)).body.meta.cache).toBe('hit');
  });

  it('never returns the old value after a write', async () => {
    const id = await createWidget(t, 1);
    for (let weight = 2; weight <= 6; weight += 1) {
      await t.http().get(`/v1/test/widgets/${id}`).expect(200);
      await t.http().patch(`/v1/test/widgets/${id}`).send({ weight }).expect(200);
      const read = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
      expect(read.body.data.weight).toBe(weight);
      expect(read.headers.etag).toBe(`"${weight}"`);
    }
  });

  it('does not let a delayed stale fill overwrite a newer entry', async () => {
    const id = await createWidget(t, 1);
    await dropEntry(TEST_REDIS_URL, id);

    widgets.fillDelayMs = 400;
    // The slow reader loads version 1, then waits before filling the cache...
    const slowRead = t.http().get(`/v1/test/widgets/${id}`);
    const slow = slowRead.then((response) => response);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // ...meanwhile a write commits version 2 and rebuilds the entry.
    widgets.fillDelayMs = 0;
    await t.http().patch(`/v1/test/widgets/${id}`).send({ weight: 42 }).expect(200);
    const stale = await slow;
    expect(stale.body.data.weight).toBe(1);
    expect(stale.body.meta.cache).toBe('miss');

    const after = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
    expect(after.body.meta.cache).toBe('hit');
    expect(after.body.data.weight).toBe(42);
    expect(await redisEntry(TEST_REDIS_URL, id)).toMatch(/^2\|0\|/);
  });

  it('an entry that cannot be read back is a miss: never sent, replaced from the database', async () => {
    const id = await createWidget(t, 5);
    await t.http().get(`/v1/test/widgets/${id}`).expect(200);
    const unreadable = async (): Promise<number> =>
      (await t.http().get('/health/ready').expect(200)).body.data.cache_stats.unreadable;
    for (const broken of ['1|0|{"id":', '1|0|not json', '1|0|[1,2]', '1|0|{"name":"no id"}', '1|0|']) {
      const before = await unreadable();
      await writeEntry(TEST_REDIS_URL, id, broken);
      const response = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
      expect(response.body.data).toMatchObject({ id, weight: 5 });
      // '1|0|' is an invalidation marker (a miss by design), not an unreadable entry.
      expect(await unreadable()).toBe(broken === '1|0|' ? before : before + 1);
      expect(await redisEntry(TEST_REDIS_URL, id)).toMatch(new RegExp(`^1\\|0\\|\\{"id":${id},`));
    }
  });

  it('loads the database once for 100 concurrent misses of one key', async () => {
    const id = await createWidget(t);
    await sql('UPDATE test_widgets SET weight = 77 WHERE id = $1', [id]); // behind the cache's back: version 2
    await dropEntry(TEST_REDIS_URL, id);

    // Long enough that all 100 requests arrive while the one load runs, even on a busy machine.
    widgets.fillDelayMs = 300;
    const loadsBefore = widgets.loads;
    const responses = await Promise.all(Array.from({ length: 100 }, () => t.http().get(`/v1/test/widgets/${id}`)));
    widgets.fillDelayMs = 0;
    expect(responses.every((response) => response.status === 200 && response.body.data.weight === 77)).toBe(true);
    expect(widgets.loads - loadsBefore).toBe(1);
  });
});

describe('cache outage (a Redis this test owns, paused with SIGSTOP)', () => {
  let redis: OwnRedis;
  let t: TestApp;
  beforeAll(async () => {
    redis = await OwnRedis.start();
    // Room for a loaded machine (four suites at once, in the side-by-side check) before and after
    // the outage: a call timing out then would open the breaker again and flush once more. While
    // Redis is paused every call waits this long, until the breaker opens after three.
    t = await startApp({ redisUrl: redis.url, env: { CACHE_TIMEOUT_MS: '2000' } });
  });
  afterAll(async () => {
    await t.close();
    await redis.stop();
  });

  it('keeps reads and writes working from the database with meta.cache bypass, and never serves stale data after Redis returns', async () => {
    const id = await createWidget(t, 1);
    expect((await t.http().get(`/v1/test/widgets/${id}`).expect(200)).body.meta.cache).toBe('hit');

    redis.pause();
    try {
      const read = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
      expect(read.body.meta.cache).toBe('bypass');
      expect(read.body.data.weight).toBe(1);
      const write = await t.http().patch(`/v1/test/widgets/${id}`).send({ weight: 2 }).expect(200);
      expect(write.body.data.weight).toBe(2);
      const created = await t
        .http()
        .post('/v1/test/widgets')
        .send({ name: 'during-outage', category: 'tool' })
        .expect(201);
      expect(created.body.data.id).toEqual(expect.any(Number));
      const fresh = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
      expect(fresh.body).toMatchObject({ data: { weight: 2 }, meta: { cache: 'bypass' } });
      expect((await t.http().get('/health/ready').expect(200)).body.data.cache).toBe('down');
    } finally {
      redis.resume();
    }

    // The entry for version 1 is still in Redis, but it must never be served again.
    await new Promise((resolve) => setTimeout(resolve, 1100)); // the circuit breaker's open window
    const after = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
    expect(after.body.data.weight).toBe(2);
    expect(after.body.meta.cache).not.toBe('hit');
    // Reads bypass the cache while this instance flushes it (one flush, in the background), then
    // miss once and hit: at version 2 every time.
    const seen: string[] = [];
    for (let n = 0; n < 20 && seen.at(-1) !== 'hit'; n += 1) {
      const again = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
      expect(again.body.data.weight).toBe(2);
      seen.push(again.body.meta.cache as string);
    }
    expect(seen.at(-1)).toBe('hit');
    expect(seen.filter((cache) => cache === 'miss')).toHaveLength(1);
  });
});
