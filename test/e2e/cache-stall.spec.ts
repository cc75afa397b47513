import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { OwnRedis } from '../support/redis-server.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

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

  it('writes answer without waiting on a paused Redis once the breaker is open, every one committed, and none is read stale after it returns', async () => {
    const target = await createUser({ role: 'operator' });
    const as = caller(t, root);
    let n = 0;
    /** One PATCH of the target's name, checked committed. */
    const write = async (): Promise<void> => {
      n += 1;
      const response = await as.patch(`/v1/admin/users/${target.id}`, { display_name: `Stall ${n}` });
      expect(response.status).toBe(200);
      expect(response.body.data.display_name).toBe(`Stall ${n}`);
    };
    const stats = async () => (await as.get('/health/ready').expect(200)).body.data.cache_stats;

    // Warm: the caller's auth context and the target's entry are in the cache.
    await as.get(`/v1/admin/users/${target.id}`).expect(200);
    expect((await as.get(`/v1/admin/users/${target.id}`).expect(200)).body.meta.cache).toBe('hit');
    for (let i = 0; i < 3; i += 1) await write();
    const before = await stats();

    redis.pause();
    let opened: { timeouts: number };
    const PAUSED_WRITES = 9;
    try {
      // The first writes' calls run out of time, one budget each, until three in a row open the breaker.
      for (let i = 0; i < 3; i += 1) await write();
      opened = await stats();
      for (let i = 0; i < PAUSED_WRITES; i += 1) await write();
    } finally {
      redis.resume();
    }
    const after = await stats();

    // What a write waits for is counted, not timed: every call that waited on the paused Redis
    // ended in a timeout. Before, each paused write's calls after its commit (the tables' bump,
    // the rebuilds) each waited out the budget even with the breaker open: two or more timeouts a
    // write. Now they are sent without waiting while it is open; only its half-open probe (one a
    // second, at most one a write) still waits.
    expect(opened.timeouts - before.timeouts).toBeGreaterThanOrEqual(3);
    expect(after.timeouts - opened.timeouts).toBeLessThanOrEqual(PAUSED_WRITES + 1);
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
