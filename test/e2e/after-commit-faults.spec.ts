import pg from 'pg';
import { actor, createUser, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAuthority, createDevice } from '../support/devices.js';
import { freePort, OwnRedis } from '../support/redis-server.js';
import { caller } from '../support/requests.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { testDatabaseUrl, testCachePrefix } from '../support/test-env.js';

interface Who {
  readonly user: TestUser;
  readonly auth: string;
}

// A key prefix of this spec's own: the failure drops the whole cache (a generation bump), which
// must not disturb the other specs of the run.
const cachePrefix = (): string => testCachePrefix('after-commit');

/**
 * Makes every re-read behind a rebuild fail after its write committed: the auth-context and
 * device-authority projections join `permissions`, which the writes below never touch. An
 * ACCESS EXCLUSIVE lock on it makes those reads wait until the statement timeout cancels them.
 */
async function withPermissionsLocked<T>(work: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('LOCK TABLE permissions IN ACCESS EXCLUSIVE MODE');
    return await work();
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
  }
}

describe('work after a commit that fails (part 7): the write answers its success and no old projection is served', () => {
  let a: TestApp;
  let b: TestApp;
  let root: Who;
  beforeAll(async () => {
    const env = { DB_STATEMENT_TIMEOUT_MS: '400' };
    a = await startApp({ widgets: false, cachePrefix: cachePrefix(), env });
    b = await startApp({ widgets: false, cachePrefix: cachePrefix(), env });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  const failures = async (app: TestApp): Promise<number> =>
    (await app.http().get('/health/ready').expect(200)).body.data.cache_stats.after_commit_failures;

  it('the attack: a role change whose auth-context rebuild fails answers 200, and the old role is never honoured again, on either instance', async () => {
    const target = await actor('admin');
    // Warm both instances: the caller's and the target's auth contexts are cache hits now.
    await caller(a, root).get('/v1/admin/users?page_size=1').expect(200);
    await caller(b, target)
      .post('/v1/admin/users', {
        email: `before-${target.user.id}@example.com`,
        display_name: 'Made as admin',
        role_id: 4,
      })
      .expect(201);
    const before = await failures(a);

    const demoted = await withPermissionsLocked(() =>
      caller(a, root).patch(`/v1/admin/users/${target.user.id}`, { role_id: 4 }),
    );
    expect(demoted.status).toBe(200);
    expect(demoted.body.data).toMatchObject({ id: target.user.id, role_id: 4 });
    expect(await sql('SELECT role_id FROM users WHERE id = $1', [target.user.id])).toEqual([{ role_id: 4 }]);
    expect(
      await sql("SELECT count(*)::int AS n FROM audit_events WHERE action = 'user.update' AND resource_id = $1", [
        String(target.user.id),
      ]),
    ).toEqual([{ n: 1 }]);
    expect(await failures(a)).toBe(before + 1);

    for (const app of [b, a]) {
      const refused = await caller(app, target)
        .post('/v1/admin/users', {
          email: `after-${target.user.id}-${app === a ? 'a' : 'b'}@example.com`,
          display_name: 'Made as viewer',
          role_id: 4,
        })
        .expect(403);
      expect(refused.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'users.create' } });
    }
  });

  it('a revoked authority whose device-set rebuild fails answers 200, and the device is refused on the next request', async () => {
    const holder = await actor('operator');
    const device = (await createDevice()).id;
    const authority = await createAuthority(device, holder.user.id, { permissions: ['devices.read'] });
    await caller(a, root).get('/v1/admin/users?page_size=1').expect(200);
    await caller(b, holder).get(`/v1/admin/devices/${device}`).expect(200);

    const revoked = await withPermissionsLocked(() =>
      caller(a, root).post(`/v1/admin/authorities/${authority}/revoke`),
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toMatchObject({ id: authority, is_active: false });

    for (const app of [b, a]) {
      const refused = await caller(app, holder).get(`/v1/admin/devices/${device}`).expect(403);
      expect(refused.body.error).toMatchObject({
        code: 'PERMISSION_DENIED',
        details: { permission: 'devices.read', device_id: device },
      });
    }
  });

  it('with every rebuild working the cache is kept (nothing is dropped needlessly)', async () => {
    const user = await createUser();
    await caller(a, root).get(`/v1/admin/users/${user.id}`).expect(200);
    const before = await failures(a);
    await caller(a, root).patch(`/v1/admin/users/${user.id}`, { display_name: 'Fine' }).expect(200);
    const read = await caller(b, root).get(`/v1/admin/users/${user.id}`).expect(200);
    expect(read.body).toMatchObject({ data: { display_name: 'Fine' }, meta: { cache: 'hit' } });
    expect(await failures(a)).toBe(before);
  });
});

describe('a partial partition: the writing instance cannot reach Redis, another instance can (part 7, 12)', () => {
  let redis: OwnRedis;
  let proxy: TcpProxy;
  let a: TestApp;
  let b: TestApp;
  let root: Who;
  beforeAll(async () => {
    redis = await OwnRedis.start();
    const port = Number(new URL(redis.url).port);
    proxy = new TcpProxy('127.0.0.1', port, await freePort());
    await proxy.open();
    const env = { CACHE_EPOCH_POLL_MS: '100' };
    // A reaches Redis only through the proxy this test cuts; B reaches it directly.
    a = await startApp({ widgets: false, redisUrl: `redis://127.0.0.1:${proxy.port}`, env });
    b = await startApp({ widgets: false, redisUrl: redis.url, env });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await proxy.open().catch(() => undefined);
    await a.close();
    await b.close();
    await proxy.cut();
    await redis.stop();
  });

  it('a demotion written on A while A cannot reach Redis is honoured by B within one epoch poll, not after CACHE_TTL_SECONDS', async () => {
    const target = await actor('admin');
    await caller(a, root).get('/v1/admin/users?page_size=1').expect(200);
    await caller(b, target)
      .post('/v1/admin/users', {
        email: `partition-before-${target.user.id}@example.com`,
        display_name: 'As admin',
        role_id: 4,
      })
      .expect(201);
    const [before] = await sql<{ epoch: string }>('SELECT epoch::text AS epoch FROM cache_epoch');

    await proxy.cut();
    const demoted = await caller(a, root).patch(`/v1/admin/users/${target.user.id}`, { role_id: 4 }).expect(200);
    expect(demoted.body.data.role_id).toBe(4);
    const stats = (await a.http().get('/health/ready').expect(200)).body.data.cache_stats;
    expect(stats.after_commit_failures).toBeGreaterThanOrEqual(1);
    expect(stats.lost_writes).toBeGreaterThanOrEqual(1);
    const [after] = await sql<{ epoch: string }>('SELECT epoch::text AS epoch FROM cache_epoch');
    expect(BigInt(after?.epoch ?? '0')).toBeGreaterThan(BigInt(before?.epoch ?? '0'));

    // B polls the epoch every 100 ms here; give it a few polls.
    await sleep(600);
    const refused = await caller(b, target)
      .post('/v1/admin/users', {
        email: `partition-after-${target.user.id}@example.com`,
        display_name: 'As viewer',
        role_id: 4,
      })
      .expect(403);
    expect(refused.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'users.create' } });
    // A, without Redis, reads the database and refuses too.
    await caller(a, target)
      .post('/v1/admin/users', {
        email: `partition-a-${target.user.id}@example.com`,
        display_name: 'As viewer',
        role_id: 4,
      })
      .expect(403);
  });
});

describe('work after a commit that stalls (part 7): the write answers within its budget', () => {
  let t: TestApp;
  let root: Who;
  beforeAll(async () => {
    // The re-read behind the rebuild would wait a minute for the lock; the budget is 300 ms.
    const env = { DB_STATEMENT_TIMEOUT_MS: '60000', AFTER_COMMIT_TIMEOUT_MS: '300' };
    t = await startApp({ widgets: false, cachePrefix: cachePrefix(), env });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('a role change whose rebuild waits on a locked table answers 200 while the lock is still held; the old role is never honoured', async () => {
    const target = await actor('admin');
    // Both auth contexts cached: the guard's own reads must not wait on the lock.
    await caller(t, root).get('/v1/admin/users?page_size=1').expect(200);
    await caller(t, target).get('/v1/admin/users?page_size=1').expect(200);
    const before = (await t.http().get('/health/ready').expect(200)).body.data.cache_stats.after_commit_failures;

    // The lock is released only after the response arrived: a write that waited for its
    // rebuild would not answer before the test's own timeout.
    const demoted = await withPermissionsLocked(() =>
      caller(t, root).patch(`/v1/admin/users/${target.user.id}`, { role_id: 4 }),
    );
    expect(demoted.status).toBe(200);
    expect(demoted.body.data).toMatchObject({ id: target.user.id, role_id: 4 });
    const after = (await t.http().get('/health/ready').expect(200)).body.data.cache_stats.after_commit_failures;
    expect(after).toBe(before + 1);

    const refused = await caller(t, target)
      .post('/v1/admin/users', { email: `stalled-${target.user.id}@example.com`, display_name: 'x', role_id: 4 })
      .expect(403);
    expect(refused.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'users.create' } });
  });
});
