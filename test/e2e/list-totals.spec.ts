import { randomUUID } from 'node:crypto';
import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { testCachePrefix } from '../support/test-env.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';

/*
 * A list's total (part 2) is counted once per filter for the generations of its tables, also
 * when pages themselves are not cached (LIST_CACHE=false, as the benchmark's uncached instance):
 * the page is read from the database every time, the count is not, until a write through the
 * API (on any instance) or the next expiry in the table changes what may match (the expiry:
 * test/unit/list-totals.spec.ts, on a clock of its own).
 */
describe('list totals remembered under their tables’ generations', () => {
  let a: TestApp;
  let b: TestApp;
  let root: Caller;
  beforeAll(async () => {
    const env = { CACHE_TIMEOUT_MS: '2000', LIST_CACHE: 'false' };
    // Both on a prefix of their own: their writes through the API bump table generations other specs read.
    const cachePrefix = testCachePrefix('list-totals');
    [a, b] = await Promise.all([
      startApp({ widgets: false, cachePrefix, env }),
      startApp({ widgets: false, cachePrefix, env }),
    ]);
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  const users = (app: TestApp, tag: string, extra = '&sort=email:asc') =>
    caller(app, root).get(`/v1/admin/users?q=lt-${tag}&page_size=1${extra}`).expect(200);

  it('pages are read from the database; the total is counted once, then again after a write on another instance', async () => {
    const tag = randomUUID().slice(0, 8);
    for (const n of [1, 2]) await createUser({ email: `lt-${tag}-${n}@example.com` });
    const first = await users(a, tag);
    expect(first.body.meta).toMatchObject({ cache: 'bypass', total: 2, total_exact: true });
    // Behind the API's back (no generation moves): the page, read from the database, shows the
    // new row; the total, remembered for these generations, is not counted again. Page 2 of the
    // same filter, in another order, shares that total.
    await sql("INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Aside', 4, 2)", [
      `lt-${tag}-0@example.com`,
    ]);
    const behind = await users(a, tag);
    expect(behind.body.data[0].email).toBe(`lt-${tag}-0@example.com`);
    expect(behind.body.meta).toMatchObject({ cache: 'bypass', total: 2 });
    expect((await users(a, tag, '&page=2&sort=email:desc')).body.meta.total).toBe(2);
    // Another filter is counted on its own.
    expect((await users(a, tag, '&sort=email:asc&role_id=4')).body.meta.total).toBe(3);
    // A write through the API on the other instance bumps the table's generation before it
    // answers: the next read on this one counts again, and sees every row.
    await caller(b, root)
      .post('/v1/admin/users', { email: `lt-${tag}-3@example.com`, display_name: 'New', role_id: 4 })
      .expect(201);
    const after = await users(a, tag);
    expect(after.body.meta).toMatchObject({ cache: 'bypass', total: 4, total_exact: true });
  });

  it('counts every time while the cache cannot be asked (no generations to remember a total under)', async () => {
    const down = await startApp({ widgets: false, redisUrl: 'redis://127.0.0.1:9/0', env: { LIST_CACHE: 'false' } });
    try {
      const tag = randomUUID().slice(0, 8);
      await createUser({ email: `lt-${tag}-1@example.com` });
      expect((await users(down, tag)).body.meta.total).toBe(1);
      await sql("INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Aside', 4, 2)", [
        `lt-${tag}-2@example.com`,
      ]);
      expect((await users(down, tag)).body.meta.total).toBe(2);
    } finally {
      await down.close();
    }
  });
});
