import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { OwnRedis } from '../support/redis-server.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

/**
 * Part 7: all of one request's cache work shares one 50 ms budget, and an open circuit breaker
 * costs nothing. A review measured every PATCH at 190-235 ms with Redis paused (18-41 ms
 * otherwise), breaker open or not: the after-commit calls ran one after another, each paying the
 * whole budget.
 */
describe('a stalled Redis (SIGSTOP on a server of this test) costs a write no more than the cache budget', () => {
  let redis: OwnRedis;
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    redis = await OwnRedis.start();
    // Production's budget (CACHE_TIMEOUT_MS 50) and its after-commit budget, on a Redis of our own.
    t = await startApp({
      redisUrl: redis.url,
      widgets: false,
      cachePrefix: testCachePrefix('cache-stall'),
      env: { AFTER_COMMIT_TIMEOUT_MS: '1000' },
    });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await t?.close();
    await redis?.stop();
  });

  it('writes answer at their usual pace while Redis is paused, every one committed, and none is read stale after it returns', async () => {
    const target = await createUser({ role: 'operator' });
    const as = caller(t, root);
    let n = 0;
    /** One PATCH of the target's name: its time in ms, after checking it committed. */
    const write = async (): Promise<number> => {
      n += 1;
      const started = performance.now();
      const response = await as.patch(`/v1/admin/users/${target.id}`, { display_name: `Stall ${n}` });
      const ms = performance.now() - started;
      expect(response.status).toBe(200);
      expect(response.body.data.display_name).toBe(`Stall ${n}`);
      return ms;
    };
    const stats = async () => (await as.get('/health/ready').expect(200)).body.data.cache_stats;

    // Warm: the caller's auth context and the target's entry are in the cache.
    await as.get(`/v1/admin/users/${target.id}`).expect(200);
    expect((await as.get(`/v1/admin/users/${target.id}`).expect(200)).body.meta.cache).toBe('hit');
    const normal: number[] = [];
    for (let i = 0; i < 9; i += 1) normal.push(await write());
    const before = await stats();

    redis.pause();
    const paused: number[] = [];
    /** The first three writes: their calls run out of time, one budget each, until three in a row open the breaker. */
    const opening = async (): Promise<{ timeouts: number }> => {
      for (let i = 0; i < 3; i += 1) await write();
      return stats();
    };
    let opened: { timeouts: number };
    let pausedFor: number;
    try {
      opened = await opening();
      const since = performance.now();
      for (let i = 0; i < 9; i += 1) paused.push(await write());
      pausedFor = performance.now() - since;
    } finally {
      redis.resume();
    }
    const after = await stats();

    // Before, each paused write paid the budget for every call after its commit even with the
    // breaker open (some 170 ms more than the normal median); now none waits while it is open
    // (it half-opens once a second: one more timeout then).
    expect(median(paused) - median(normal)).toBeLessThan(100);
    // Three timeouts in a row opened the breaker during the first writes.
    expect(opened.timeouts - before.timeouts).toBeGreaterThanOrEqual(3);
    // At most one more per second the writes took (however loaded the machine), and one for the
    // stats read after them; before, every paused write added some.
    expect(after.timeouts - opened.timeouts).toBeLessThanOrEqual(2 + Math.ceil(pausedFor / 1000));
    // Every write's cache work was lost (sent without waiting, or timed out), and each dropped
    // the cache (through the database's epoch while Redis could not be reached).
    expect(after.lost_writes - before.lost_writes).toBeGreaterThanOrEqual(12);
    expect(after.after_commit_failures - before.after_commit_failures).toBe(12);
    expect(after.short_circuited).toBeGreaterThan(before.short_circuited);
    expect(await sql('SELECT display_name FROM users WHERE id = $1', [target.id])).toEqual([
      { display_name: `Stall ${n}` },
    ]);
    // Redis back: the entry of the normal writes is still stored there and is never served.
    for (let i = 0; i < 5; i += 1) {
      const read = await as.get(`/v1/admin/users/${target.id}`).expect(200);
      expect(read.body.data.display_name).toBe(`Stall ${n}`);
    }
  });
});
