import { withRawRedis } from '../support/redis-raw.js';
import { randomUUID } from 'node:crypto';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';

/*
 * List pages through the cache (parts 2 and 7): `meta.cache` on every list, a repeated page is a
 * hit, any write to a table makes its cached pages unusable before the write's response is sent
 * (on every instance), the row scope of the actor is part of the key, and a page judged at now()
 * is reloaded when the next expiry passes.
 */
describe('cached list pages', () => {
  let a: TestApp;
  let b: TestApp;
  let root: Caller;
  beforeAll(async () => {
    // A cache budget a loaded machine cannot exceed: a call past the 50 ms default is a bypass,
    // and this spec is about what the cache answers, not about its timeouts.
    const env = { CACHE_TIMEOUT_MS: '2000' };
    [a, b] = await Promise.all([startApp({ widgets: false, env }), startApp({ widgets: false, env })]);
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  const emails = (body: { data: { email: string }[] }): string[] => body.data.map((user) => user.email);

  /**
   * A read expected to hit a users page: the database is shared, and another spec's write to users
   * or groups (any one makes every users page unusable, as it must) may fall between the fill and
   * the read. A few tries, with no wait, find one read that follows its fill undisturbed.
   */
  async function hitOf<R extends { body: { meta: { cache: string } } }>(read: () => Promise<R>): Promise<R> {
    let response = await read();
    for (let attempt = 1; attempt < 5 && response.body.meta.cache !== 'hit'; attempt += 1) response = await read();
    return response;
  }

  it('answers a repeated page from the cache with the same body, and a normalised query hits the same page', async () => {
    const tag = randomUUID().slice(0, 8);
    for (const n of [1, 2, 3]) await createUser({ email: `lc-${tag}-${n}@example.com` });
    const first = await caller(a, root).get(`/v1/admin/users?q=lc-${tag}&sort=email:asc&page_size=2`).expect(200);
    expect(first.body.meta).toMatchObject({ cache: 'miss', total: 3, total_exact: true, page: 1, page_size: 2 });
    const again = await hitOf(() =>
      caller(a, root).get(`/v1/admin/users?page_size=2&sort=email:asc&q=lc-${tag}&page=1`).expect(200),
    );
    expect(again.body.meta.cache).toBe('hit');
    expect(again.body.data).toEqual(first.body.data);
    expect(again.body.meta.total).toBe(3);
    expect(emails(again.body)).toEqual([`lc-${tag}-1@example.com`, `lc-${tag}-2@example.com`]);
    // Another instance shares the page through Redis.
    expect(
      (await hitOf(() => caller(b, root).get(`/v1/admin/users?q=lc-${tag}&sort=email:asc&page_size=2`).expect(200)))
        .body.meta.cache,
    ).toBe('hit');
  });

  it("a write through the API makes the table's cached pages unusable on every instance before it answers", async () => {
    const tag = randomUUID().slice(0, 8);
    const path = `/v1/admin/users?q=lw-${tag}&sort=email:asc`;
    await createUser({ email: `lw-${tag}-1@example.com` });
    await caller(a, root).get(path).expect(200);
    expect((await hitOf(() => caller(b, root).get(path).expect(200))).body.meta.cache).toBe('hit');
    // Written on a, read at once on b: the new user is there.
    await caller(a, root)
      .post('/v1/admin/users', { email: `lw-${tag}-2@example.com`, display_name: 'New', role_id: 4 })
      .expect(201);
    const after = await caller(b, root).get(path).expect(200);
    expect(after.body.meta.cache).toBe('miss');
    expect(emails(after.body)).toEqual([`lw-${tag}-1@example.com`, `lw-${tag}-2@example.com`]);
    // A write to another table leaves the users pages alone.
    await caller(a, root)
      .post('/v1/admin/devices', { serial_number: `LW-${tag}`, name: 'Other table' })
      .expect(201);
    expect((await hitOf(() => caller(b, root).get(path).expect(200))).body.meta.cache).toBe('hit');
    // An update (not only an insert) of a row on the page.
    const [user] = await sql<{ id: number }>('SELECT id FROM users WHERE email = $1', [`lw-${tag}-2@example.com`]);
    await caller(a, root).patch(`/v1/admin/users/${user?.id}`, { display_name: 'Renamed' }).expect(200);
    const renamed = await caller(b, root).get(path).expect(200);
    expect(renamed.body.meta.cache).toBe('miss');
    expect((renamed.body.data as { display_name: string }[]).map((row) => row.display_name)).toEqual([
      'Test viewer',
      'Renamed',
    ]);
  });

  it("keys row-filtered lists by the actor's scope: each operator sees its own devices, and a new authority shows at once", async () => {
    const [one, two] = [await actor('operator'), await actor('operator')];
    const mine = await createDevice({ ownerId: one.user.id });
    const theirs = await createDevice({ ownerId: two.user.id });
    const ids = (body: { data: { id: number }[] }): number[] => body.data.map((device) => device.id);
    await caller(a, one).get('/v1/admin/devices?sort=id:asc').expect(200);
    const oneHit = await caller(a, one).get('/v1/admin/devices?sort=id:asc').expect(200);
    expect(oneHit.body.meta.cache).toBe('hit');
    expect(ids(oneHit.body)).toEqual([mine.id]);
    const twoFirst = await caller(a, two).get('/v1/admin/devices?sort=id:asc').expect(200);
    expect(twoFirst.body.meta.cache).toBe('miss');
    expect(ids(twoFirst.body)).toEqual([theirs.id]);
    // Operator one gains an authority on the other device through the API: its page changes.
    await caller(a, root).post('/v1/admin/authorities', { device_id: theirs.id, user_id: one.user.id }).expect(201);
    await caller(a, root)
      .post('/v1/admin/authority-permissions', {
        authority_id: (
          await sql<{ id: number }>('SELECT id FROM authorities WHERE device_id = $1 AND user_id = $2', [
            theirs.id,
            one.user.id,
          ])
        )[0]?.id,
        permission_id: permissionId('devices.read'),
      })
      .expect(201);
    expect(ids((await caller(b, one).get('/v1/admin/devices?sort=id:asc').expect(200)).body)).toEqual([
      mine.id,
      theirs.id,
    ]);
  });

  it('reloads a page judged at now() when the next expiry in its table passes', async () => {
    const user = await createUser();
    await caller(a, root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: user.id,
        permission_id: permissionId('audit.read'),
        expires_at: new Date(Date.now() + 1500).toISOString(),
      })
      .expect(201);
    const path = `/v1/admin/permission-grants?user_id=${user.id}`;
    await caller(a, root).get(path).expect(200);
    const before = await caller(a, root).get(path).expect(200);
    expect(before.body.meta.cache).toBe('hit');
    expect(before.body.data).toEqual([expect.objectContaining({ is_active: true })]);
    await new Promise((resolve) => setTimeout(resolve, 1700));
    const after = await caller(a, root).get(path).expect(200);
    expect(after.body.meta.cache).toBe('miss');
    expect(after.body.data).toEqual([expect.objectContaining({ is_active: false })]);
  });

  it('never answers a read made after a write with a page loaded before it (concurrent writers, one shared page)', async () => {
    const holder = await createUser();
    const ids: number[] = [];
    for (let n = 0; n < 40; n += 1) {
      const device = await createDevice();
      const [row] = await sql<{ id: number }>(
        'INSERT INTO authorities (device_id, user_id, label) VALUES ($1, $2, $3) RETURNING id',
        [device.id, holder.id, 'start'],
      );
      ids.push(row?.id ?? 0);
    }
    const page = `/v1/admin/authorities?user_id=${holder.id}&sort=id:asc&page_size=50`;
    const stale: string[] = [];
    await Promise.all(
      ids.map(async (id, worker) => {
        for (let n = 0; n < 8; n += 1) {
          const label = `w${worker}-${n}`;
          // One instance: a read there could join a load that instance began before the write.
          await caller(a, root).patch(`/v1/admin/authorities/${id}`, { label }).expect(200);
          const read = await caller(a, root).get(page).expect(200);
          const seen = (read.body.data as { id: number; label: string }[]).find((row) => row.id === id)?.label;
          if (seen !== label) stale.push(`${label} read as ${seen} (${read.body.meta.cache})`);
        }
      }),
    );
    expect(stale).toEqual([]);
  }, 60_000);

  it('treats a corrupted page as a miss and replaces it', async () => {
    const tag = randomUUID().slice(0, 8);
    await createUser({ email: `lx-${tag}@example.com` });
    const path = `/v1/admin/users?q=lx-${tag}`;
    const expected = (await caller(a, root).get(path).expect(200)).body.data as unknown;
    await withRawRedis(TEST_REDIS_URL, async (redis) => {
      const keys = [...(await redis.entries(testCachePrefix()))].filter(([key]) => key.startsWith('list:'));
      expect(keys.length).toBeGreaterThan(0);
      for (const [, stored] of keys) await redis.set(stored, '999999999|0|{"g":[1]}\n[{"email":"intruder"}');
    });
    const unreadable = (await a.http().get('/health/ready').expect(200)).body.data.cache_stats.unreadable as number;
    const read = await caller(a, root).get(path).expect(200);
    expect(read.body.meta.cache).toBe('miss');
    expect(read.body.data).toEqual(expected);
    expect((await a.http().get('/health/ready').expect(200)).body.data.cache_stats.unreadable).toBeGreaterThan(
      unreadable,
    );
    // The page refilled is served from the cache (hitOf: another spec's write may fall between).
    expect((await hitOf(() => caller(a, root).get(path).expect(200))).body.meta.cache).toBe('hit');
  });

  it('says bypass when the cache cannot be asked or LIST_CACHE is off, and miss/hit with the in-process cache', async () => {
    const down = await startApp({ widgets: false, redisUrl: 'redis://127.0.0.1:9/0' });
    try {
      expect((await caller(down, root).get('/v1/admin/roles').expect(200)).body.meta.cache).toBe('bypass');
    } finally {
      await down.close();
    }
    const off = await startApp({ widgets: false, env: { LIST_CACHE: 'false' } });
    try {
      await caller(off, root).get('/v1/admin/roles').expect(200);
      expect((await caller(off, root).get('/v1/admin/roles').expect(200)).body.meta.cache).toBe('bypass');
    } finally {
      await off.close();
    }
    const memory = await startApp({ widgets: false, redisUrl: null });
    try {
      expect((await caller(memory, root).get('/v1/admin/roles').expect(200)).body.meta.cache).toBe('miss');
      const hit = await caller(memory, root).get('/v1/admin/roles').expect(200);
      expect(hit.body.meta.cache).toBe('hit');
      expect((hit.body.data as { permissions: string[] }[])[0]?.permissions.length).toBeGreaterThan(0);
    } finally {
      await memory.close();
    }
  });
});
