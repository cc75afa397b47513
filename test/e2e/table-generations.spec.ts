import { cacheKeys, storedKeys } from '../../src/platform/cache/cache-keys.js';
import { TableGenerations } from '../../src/platform/cache/table-generations.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { actor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { createDevice } from '../support/devices.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';
import { withRawRedis } from '../support/redis-raw.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';
import { table } from '../../src/platform/database/table.js';

const TABLES = ['users', 'audit_events', 'authorities', 'devices', 'projection_versions'] as const;

describe('table generations: every committed write makes the cached list pages of its tables unusable', () => {
  let t: TestApp;
  let root: Caller;
  let cache: TableGenerations;
  const prefix = testCachePrefix('table-generations');

  const generations = async (): Promise<Record<(typeof TABLES)[number], number>> => {
    const values = await cache.current(TABLES);
    if (values === undefined) throw new Error('cache unreachable');
    const [users = 0, audit_events = 0, authorities = 0, devices = 0, projection_versions = 0] = values;
    return { users, audit_events, authorities, devices, projection_versions };
  };

  beforeAll(async () => {
    // A key prefix of its own: the generations are shared counters, and other specs write too.
    // A cache budget a loaded machine cannot exceed: the spec asserts hits and misses.
    t = await startApp({ cachePrefix: prefix, widgets: false, env: { CACHE_TIMEOUT_MS: '2000' } });
    cache = t.app.get(TableGenerations);
    root = await actor('super_admin');
    // A generation that does not exist yet starts from the server clock, not from 1 (it may have
    // been evicted after use): the first bump of each is a jump, every later one adds exactly 1.
    expect(await cache.bump(TABLES)).toBe(true);
    expect(Math.min(...Object.values(await generations()))).toBeGreaterThan(Date.now() * 1000 - 60_000_000);
  });
  afterAll(() => t.close());

  it('a table generation that goes missing (evicted) starts again from the clock, and its pages are misses', async () => {
    const list = '/v1/admin/devices?page_size=1&sort=id:asc';
    await caller(t, root).get(list).expect(200);
    expect((await caller(t, root).get(list).expect(200)).body.meta.cache).toBe('hit');
    await withRawRedis(TEST_REDIS_URL, async (redis) => {
      const [before] = (await cache.current(['devices'])) ?? [];
      expect(await redis.del(storedKeys.tableGeneration(prefix, cacheKeys.tableGeneration('devices')))).toBe(1);
      // A missing generation read as 0 could match a page built while it was 0 before: it is not.
      expect((await caller(t, root).get(list).expect(200)).body.meta.cache).toBe('miss');
      const [after] = (await cache.current(['devices'])) ?? [];
      expect(after).toBeGreaterThan(before ?? 0);
      expect((await caller(t, root).get(list).expect(200)).body.meta.cache).toBe('hit');
    });
  });

  it('a create bumps its table and the audit trail once, and nothing else', async () => {
    const before = await generations();
    const email = `gen-${Date.now()}@example.com`;
    await caller(t, root).post('/v1/admin/users').send({ email, display_name: 'Gen', role_id: 4 }).expect(201);
    expect(await generations()).toEqual({ ...before, users: before.users + 1, audit_events: before.audit_events + 1 });
  });

  it('a write bumps the tables list pages read; projection_versions, which no list reads, is left alone; reads and refused writes bump nothing', async () => {
    const device = await createDevice();
    const user = await sql<{ id: number }>(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'G', 4, 2) RETURNING id",
      [`gen-a-${Date.now()}@example.com`],
    );
    const before = await generations();
    await caller(t, root)
      .post('/v1/admin/authorities')
      .send({ device_id: device.id, user_id: user[0]?.id })
      .expect(201);
    const after = await generations();
    expect(after).toEqual({
      ...before,
      authorities: before.authorities + 1,
      audit_events: before.audit_events + 1,
    });
    // The write did change projection_versions: its generation is not worth a Redis call.
    expect(
      await sql('SELECT count(*)::int AS n FROM projection_versions WHERE scope = $1 AND id = $2', [
        'device',
        device.id,
      ]),
    ).toEqual([{ n: 1 }]);
    await caller(t, root).get('/v1/admin/authorities').expect(200);
    await caller(t, root)
      .post('/v1/admin/authorities')
      .send({ device_id: device.id, user_id: user[0]?.id })
      .expect(409);
    await caller(t, root)
      .patch(`/v1/admin/devices/${device.id}`, { name: 'x'.repeat(500) })
      .expect(400);
    expect(await generations()).toEqual(after);
  });

  it('under test, a transaction that writes a table it did not declare is refused and rolled back', async () => {
    const uow = t.app.get(UnitOfWork);
    const email = `undeclared-${Date.now()}@example.com`;
    await expect(
      uow.run(async (tx) => {
        await tx.db.query("INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'U', 4, 1)", [
          email,
        ]);
      }),
    ).rejects.toThrow('tables written outside tx.write(): users');
    expect(await sql('SELECT id FROM users WHERE email = $1', [email])).toEqual([]);
    await uow.run(async (tx) => {
      await tx.write(
        table('users'),
        "INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'U', 4, 1)",
        [email],
      );
    });
    expect(await sql('SELECT id FROM users WHERE email = $1', [email])).toHaveLength(1);
  });
});
