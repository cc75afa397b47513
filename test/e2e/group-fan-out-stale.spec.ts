import { randomUUID } from 'node:crypto';
import { REBUILT_UP_TO } from '../../src/access-model/group-access.service.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { signToken, type Caller, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sqlOn } from '../support/db.js';
import { addMembers, createGroup } from '../support/groups.js';
import { createOwnDatabase } from '../support/own-database.js';
import { caller } from '../support/requests.js';

/*
 * Issue 40, item 8: a change that reaches more users than are rebuilt after the commit (a group of
 * 100 000 took some 17 s to rebuild, past the write's after-commit budget, and the whole cache was
 * dropped for it: a herd of misses for every user it did not touch). Their entries are marked
 * stale at their new versions inside the write instead. Two instances share the cache. On a
 * database of its own: its fan-outs leave deferred access events that another spec's drain counts.
 */
describe('a group change reaching more users than are rebuilt: their entries marked stale in the write', () => {
  let own: { url: string; drop: () => Promise<void> };
  const sql = <T>(text: string, params: unknown[] = []): Promise<T[]> => sqlOn<T>(own.url, text, params);
  let a: TestApp;
  let b: TestApp;
  let root: Caller;
  /** A user inserted straight into this database, and a token for it. */
  const userWithToken = async (role: number): Promise<{ id: number; token: string }> => {
    const [user] = await sql<{ id: string }>(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Fan-out', $2, 2) RETURNING id",
      [`fan-out-${randomUUID().slice(0, 12)}@example.com`, role],
    );
    const [session] = await sql<{ id: string }>(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
      [user?.id],
    );
    return { id: Number(user?.id), token: signToken({ sub: String(user?.id), sid: session?.id ?? '' }) };
  };
  beforeAll(async () => {
    own = await createOwnDatabase('group_fan_out_stale');
    [a, b] = await Promise.all([
      startApp({ widgets: false, databaseUrl: own.url }),
      startApp({ widgets: false, databaseUrl: own.url }),
    ]);
    const admin = await userWithToken(1);
    root = {
      user: { id: admin.id, email: '', role_id: 1, status_id: 2 } as TestUser,
      token: admin.token,
      auth: `Bearer ${admin.token}`,
    };
  }, 120_000);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await own?.drop();
  });

  it('takes effect on the other instance at once, both ways, and leaves the untouched users’ entries in the cache', async () => {
    const members = (
      await sql<{ id: string }>(
        `INSERT INTO users (email, display_name, role_id, status_id)
         SELECT 'fan-out-member-' || i || '@example.com', 'Fan-out member', 3, 2
         FROM generate_series(1, $1::int) i ORDER BY i RETURNING id`,
        [REBUILT_UP_TO + 1],
      )
    ).map((row) => Number(row.id));
    const team = await createGroup(a, root);
    await addMembers(
      a,
      root,
      team,
      members.slice(0, 1000).map((id) => ({ user_id: id })),
    );
    await addMembers(
      a,
      root,
      team,
      members.slice(1000).map((id) => ({ user_id: id })),
    );
    // "parent" holds authorities.read on a device through its authority there.
    const parent = await createGroup(a, root);
    const holder = await userWithToken(3);
    const [device] = await sql<{ id: string }>(
      "INSERT INTO devices (serial_number, name) VALUES ('SN-fan-out', 'Fan-out device') RETURNING id",
    );
    const [target] = await sql<{ id: string }>(
      'INSERT INTO authorities (device_id, user_id) VALUES ($1, $2) RETURNING id',
      [device?.id, holder.id],
    );
    const [held] = await sql<{ id: string }>(
      'INSERT INTO authorities (device_id, group_id, is_active) VALUES ($1, $2, true) RETURNING id',
      [device?.id, parent],
    );
    await sql(
      "INSERT INTO authority_permissions (authority_id, permission_id) SELECT $1, id FROM permissions WHERE code = 'authorities.read'",
      [held?.id],
    );
    const member = members[members.length - 1] ?? 0;
    const [session] = await sql<{ id: string }>(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
      [member],
    );
    const asMember = { authorization: `Bearer ${signToken({ sub: String(member), sid: session?.id ?? '' })}` };
    const readTarget = async (): Promise<number> =>
      (await b.http().get(`/v1/admin/authorities/${target?.id}`).set(asMember)).status;
    // Warm on b: the member's context (refused), and an untouched user's detail (a hit).
    expect(await readTarget()).toBe(403);
    const untouched = await userWithToken(4);
    const untouchedCache = async (): Promise<string> =>
      (await caller(b, root).get(`/v1/admin/users/${untouched.id}`).expect(200)).body.meta.cache as string;
    await untouchedCache();
    expect(await untouchedCache()).toBe('hit');
    const stats = async () => (await caller(a, root).get('/health/ready').expect(200)).body.data.cache_stats;
    const before = await stats();
    const entries = a.app.get(CacheEntries);

    await addMembers(a, root, parent, [{ group_id: team }]);
    // Marked stale in the write (an entry with its version and no data), not rebuilt after it.
    const marked = await entries.get(`auth:user:${member}`);
    expect(marked.entry?.json).toBe('');
    expect(await readTarget()).toBe(200);
    expect(await untouchedCache()).toBe('hit');

    const removed = await caller(a, root)
      .post(`/v1/admin/groups/${parent}/members/remove`, { members: [{ group_id: team }] })
      .expect(200);
    expect(removed.body.data.results[0].status).toBe('removed');
    expect(await readTarget()).toBe(403);
    expect(await untouchedCache()).toBe('hit');
    // Nothing was dropped for it: no work after either commit failed or ran past its budget.
    const after = await stats();
    expect(after.after_commit_failures).toBe(before.after_commit_failures);
    expect(after.lost_writes).toBe(before.lost_writes);
    // The member's detail is read fresh (loaded at its new version, then a hit).
    const detail = await caller(b, root).get(`/v1/admin/users/${member}`).expect(200);
    expect(detail.body.meta.cache).not.toBe('hit');
    expect((await caller(b, root).get(`/v1/admin/users/${member}`).expect(200)).body.meta.cache).toBe('hit');
  }, 120_000);
});
