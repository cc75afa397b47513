import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { tellRedis } from '../../src/cli/tell-redis.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import type { CacheStore } from '../../src/platform/cache/cache-store.js';
import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

/*
 * A remembered list total (ListTotals) is kept under its tables' generations only. A
 * flush of the whole cache (what a lost write's after-commit work, the cache epoch and the CLI's
 * `ServerCaches` without a table list all do) moves the shard generations, not the table
 * generations: cached pages go, remembered totals stay, and a page reloaded after the flush is
 * sent (and cached again) with a total counted before the write.
 */
describe('remembered list totals after a flush of the whole cache', () => {
  let root: Caller;
  beforeAll(async () => {
    root = await actor('super_admin');
  });
  afterEach(() => jest.restoreAllMocks());

  const users = (app: TestApp, tag: string) =>
    caller(app, root).get(`/v1/admin/users?q=r2t-${tag}&page_size=1&sort=email:asc`).expect(200);

  it('a CLI write that drops the whole cache (ServerCaches without tables: seed-demo) is counted on the next read (LIST_CACHE=false)', async () => {
    const t = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('list-totals-flush-cli'),
      env: { LIST_CACHE: 'false' },
    });
    try {
      const tag = randomUUID().slice(0, 8);
      await createUser({ email: `r2t-${tag}-1@example.com` });
      expect((await users(t, tag)).body.meta).toMatchObject({ total: 1 });
      // What `seed-demo` does: rows written by the CLI, then Redis told to drop everything.
      await sql("INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Seeded', 4, 2)", [
        `r2t-${tag}-0@example.com`,
      ]);
      expect(await tellRedis(t.settings, undefined)).toBe(true);
      const after = await users(t, tag);
      expect(after.body.data[0].email).toBe(`r2t-${tag}-0@example.com`);
      expect(after.body.meta).toMatchObject({ total: 2, total_exact: true });
    } finally {
      await t.close();
    }
  });

  it('a write through the API whose generation bump did not land (a lost write: the cache is flushed) is counted on the next read (LIST_CACHE on)', async () => {
    const t = await startApp({ widgets: false, cachePrefix: testCachePrefix('list-totals-flush-lost') });
    try {
      const tag = randomUUID().slice(0, 8);
      await createUser({ email: `r2t-${tag}-1@example.com` });
      expect((await users(t, tag)).body.meta).toMatchObject({ cache: 'miss', total: 1 });
      expect((await users(t, tag)).body.meta).toMatchObject({ cache: 'hit', total: 1 });
      // Redis refuses the bump after the write's commit (a blip): the write answers, the
      // instance counts a lost write and drops the whole cache before it answers.
      const store = (t.app.get<CacheService>(CacheService) as unknown as { store: CacheStore }).store;
      jest.spyOn(store, 'bumpGenerations').mockRejectedValueOnce(new Error('READONLY (a blip)'));
      await caller(t, root)
        .post('/v1/admin/users', { email: `r2t-${tag}-0@example.com`, display_name: 'New', role_id: 4 })
        .expect(201);
      const after = await users(t, tag);
      expect(after.body.data[0].email).toBe(`r2t-${tag}-0@example.com`);
      expect(after.body.meta).toMatchObject({ total: 2, total_exact: true });
    } finally {
      await t.close();
    }
  });
});
