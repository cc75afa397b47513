import { randomUUID } from 'node:crypto';
import { AuthContextService } from '../../src/access-model/auth-context.service.js';
import { GroupAccess, REBUILT_UP_TO } from '../../src/access-model/group-access.service.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { permissionId, signToken, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sqlOn } from '../support/db.js';
import { addMembers, createGroup } from '../support/groups.js';
import { createOwnDatabase } from '../support/own-database.js';
import { caller } from '../support/requests.js';

/*
 * Issue 40, item 8: a change that reaches more users than are rebuilt after the commit (a group of
 * 100 000 took some 17 s to rebuild, past the write's after-commit budget, and the whole cache was
 * dropped for it: a herd of misses for every user it did not touch). Their entries are marked
 * stale at their new versions inside the write, which moves those versions far enough that a
 * write of one of them committing meanwhile rebuilds below the markers. Two instances share the
 * cache; `a` writes, `b` reads. On a database of its own: its fan-outs leave deferred access
 * events that another spec's drain counts. The attacks of an independent review are kept here.
 */
describe('a group change reaching more users than are rebuilt: their entries marked stale', () => {
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
    return { id: Number(user?.id), token: await tokenOf(Number(user?.id)) };
  };
  const tokenOf = async (userId: number): Promise<string> => {
    const [session] = await sql<{ id: string }>(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
      [userId],
    );
    return signToken({ sub: String(userId), sid: session?.id ?? '' });
  };
  beforeAll(async () => {
    own = await createOwnDatabase('group_fan_out_stale');
    [a, b] = await Promise.all([
      startApp({ widgets: false, databaseUrl: own.url }),
      startApp({ widgets: false, databaseUrl: own.url }),
    ]);
    const admin = await userWithToken(1);
    root = {
      user: { id: admin.id, email: '', role_id: 1, status_id: 2 },
      token: admin.token,
      auth: `Bearer ${admin.token}`,
    };
  }, 120_000);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await own?.drop();
  });

  /**
   * A team of REBUILT_UP_TO + 1 operators, and a parent conferring the admin role and
   * `authorities.read` through its authority on a device; its last member's reads on `b`.
   */
  async function world() {
    const tag = randomUUID().slice(0, 8);
    const members = (
      await sql<{ id: string }>(
        `INSERT INTO users (email, display_name, role_id, status_id)
         SELECT 'fan-out-' || $1 || '-' || i || '@example.com', 'Fan-out member', 3, 2
         FROM generate_series(1, $2::int) i ORDER BY i RETURNING id`,
        [tag, REBUILT_UP_TO + 1],
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
    const parent = await createGroup(a, root, { role_id: 2 });
    const holder = await userWithToken(3);
    const [device] = await sql<{ id: string }>(
      'INSERT INTO devices (serial_number, name) VALUES ($1, $2) RETURNING id',
      [`SN-${tag}`, 'Fan-out device'],
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
    const asMember = { authorization: `Bearer ${await tokenOf(member)}` };
    return {
      team,
      parent,
      member,
      heldAuthority: Number(held?.id),
      nest: () => caller(a, root).post(`/v1/admin/groups/${parent}/members`, { members: [{ group_id: team }] }),
      readTarget: async (): Promise<number> =>
        (await b.http().get(`/v1/admin/authorities/${target?.id}`).set(asMember)).status,
      effectiveRole: async (): Promise<{ role: number; cache: string }> => {
        const res = await caller(b, root).get(`/v1/admin/users/${member}`).expect(200);
        return { role: res.body.data.effective_role_id as number, cache: res.body.meta.cache as string };
      },
    };
  }

  /** The version the member's auth context is at in the database. */
  const contextVersion = async (member: number): Promise<number> => {
    const [row] = await sql<{ version: string }>(
      `SELECT u.version + coalesce((SELECT v.version FROM projection_versions v WHERE v.scope = 'user' AND v.id = u.id), 1)
         + coalesce((SELECT v.version FROM projection_versions v WHERE v.scope = 'user_groups' AND v.id = u.id), 1) AS version
       FROM users u WHERE u.id = $1`,
      [member],
    );
    return Number(row?.version);
  };

  const stats = async () => (await caller(a, root).get('/health/ready').expect(200)).body.data.cache_stats;

  /** Holds the write that marks `member` stale inside its transaction, after its markers, until released. */
  function holdAfterMarking(member: number): { reached: Promise<void>; release: () => void } {
    let reach!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((resolve) => (reach = resolve));
    const gate = new Promise<void>((resolve) => (release = resolve));
    let armed = true;
    a.app.get(GroupAccess).onUsersStale(async (versions) => {
      if (armed && versions.has(member)) {
        armed = false;
        reach();
        await gate;
      }
      return true;
    });
    return { reached, release };
  }

  it('takes effect on the other instance at once, both ways, and leaves the untouched users’ entries in the cache', async () => {
    const w = await world();
    // Warm on b: the member's context (refused), and an untouched user's detail (a hit).
    expect(await w.readTarget()).toBe(403);
    const untouched = await userWithToken(4);
    const untouchedCache = async (): Promise<string> =>
      (await caller(b, root).get(`/v1/admin/users/${untouched.id}`).expect(200)).body.meta.cache as string;
    await untouchedCache();
    expect(await untouchedCache()).toBe('hit');
    const before = await stats();

    expect((await w.nest()).status).toBe(200);
    // Marked stale (an entry with its version and no data), not rebuilt.
    expect((await a.app.get(CacheEntries).get(`auth:user:${w.member}`)).entry?.json).toBe('');
    expect(await w.readTarget()).toBe(200);
    expect((await w.effectiveRole()).role).toBe(2);
    expect(await untouchedCache()).toBe('hit');

    const removed = await caller(a, root)
      .post(`/v1/admin/groups/${w.parent}/members/remove`, { members: [{ group_id: w.team }] })
      .expect(200);
    expect(removed.body.data.results[0].status).toBe('removed');
    expect(await w.readTarget()).toBe(403);
    expect((await w.effectiveRole()).role).toBe(3);
    expect(await untouchedCache()).toBe('hit');
    // Nothing was dropped for it: no work after either commit failed or ran past its budget.
    const after = await stats();
    expect(after.after_commit_failures).toBe(before.after_commit_failures);
    expect(after.lost_writes).toBe(before.lost_writes);
  }, 120_000);

  it('a write of a reached user that commits between the markers and the commit is not left stale (found by a review)', async () => {
    const w = await world();
    expect(await w.readTarget()).toBe(403);
    expect((await w.effectiveRole()).role).toBe(3);
    expect((await w.effectiveRole()).cache).toBe('hit');
    const hold = holdAfterMarking(w.member);
    const nesting = w.nest().then((res) => res);
    await hold.reached;
    // An ordinary write of the member on b (no lock in common with the nesting), answered: it does
    // not count the nesting's bump, so its rebuild (without the nesting's groups) comes below the
    // marker, and is refused. With a step of 1 it reached the marker's very version and stood.
    await caller(b, root).patch(`/v1/admin/users/${w.member}`, { display_name: 'Renamed meanwhile' }).expect(200);
    const marked = (await a.app.get(CacheEntries).get(`auth:user:${w.member}`)).entry;
    hold.release();
    expect((await nesting).status).toBe(200);
    expect(marked?.json).toBe('');
    expect(await w.readTarget()).toBe(200);
    expect((await w.effectiveRole()).role).toBe(2);
    // The read after the response loaded the entry at the version both writes make, and stored it.
    const [db] = await sql<{ version: string }>(
      `SELECT u.version + coalesce((SELECT v.version FROM projection_versions v WHERE v.scope = 'user' AND v.id = u.id), 1)
         + coalesce((SELECT v.version FROM projection_versions v WHERE v.scope = 'user_groups' AND v.id = u.id), 1) AS version
       FROM users u WHERE u.id = $1`,
      [w.member],
    );
    const stored = (await a.app.get(CacheEntries).get(`auth:user:${w.member}`)).entry;
    expect(stored?.version).toBe(Number(db?.version));
    expect(stored?.json).not.toBe('');
  }, 120_000);

  it('reads on b while the write is held after its markers see the old access, and the new one right after the response', async () => {
    const w = await world();
    expect(await w.readTarget()).toBe(403);
    expect((await w.effectiveRole()).role).toBe(3);
    const hold = holdAfterMarking(w.member);
    const nesting = w.nest().then((res) => res);
    await hold.reached;
    const during = [await w.readTarget(), (await w.effectiveRole()).role];
    hold.release();
    expect((await nesting).status).toBe(200);
    const afterResponse = [await w.readTarget(), (await w.effectiveRole()).role];
    expect({ during, afterResponse }).toEqual({ during: [403, 3], afterResponse: [200, 2] });
  }, 120_000);

  it('markers Redis refuses inside the write: the write stands and the cache is dropped after it (found by a review)', async () => {
    const w = await world();
    expect(await w.readTarget()).toBe(403);
    expect((await w.effectiveRole()).role).toBe(3);
    expect((await w.effectiveRole()).cache).toBe('hit');
    // Redis refuses `a`'s marker calls made inside the write (through the envelope: lost writes).
    const entries = a.app.get(CacheEntries);
    const contexts = a.app.get(AuthContextService);
    let refusing = false;
    const putMany = entries.putMany.bind(entries);
    entries.putMany = async (marks) => {
      if (!refusing) return putMany(marks);
      const refused = await entries.cache.call(
        'mset',
        `${marks.length} keys`,
        () => Promise.reject(new Error('simulated: Connection reset')),
        { afterWrite: true },
      );
      return refused.ok;
    };
    const markStale = contexts.markStale.bind(contexts);
    contexts.markStale = (versions) => {
      refusing = true;
      return markStale(versions);
    };
    // Registered after the users module's: the details' markers are refused too.
    a.app.get(GroupAccess).onUsersStale(() => {
      refusing = false;
      return Promise.resolve(true);
    });
    const before = await stats();
    try {
      expect((await w.nest()).status).toBe(200);
    } finally {
      // The later tests' writes mark for real.
      entries.putMany = putMany;
      contexts.markStale = markStale;
    }
    const after = await stats();
    // Both kinds' marker calls were lost (several calls each: 500 markers a call), and counted.
    expect(after.lost_writes - before.lost_writes).toBeGreaterThanOrEqual(2);
    expect(after.after_commit_failures - before.after_commit_failures).toBe(1);
    expect(await w.readTarget()).toBe(200);
    expect((await w.effectiveRole()).role).toBe(2);
  }, 120_000);

  it('a dry_run of the nesting writes no marker', async () => {
    const w = await world();
    expect(await w.readTarget()).toBe(403);
    const entries = a.app.get(CacheEntries);
    const before = (await entries.get(`auth:user:${w.member}`)).entry;
    expect(before?.json).not.toBe('');
    const res = await caller(a, root)
      .post(`/v1/admin/groups/${w.parent}/members?dry_run=true`, { members: [{ group_id: w.team }] })
      .expect(200);
    expect(res.body.data.dry_run).toBe(true);
    expect((await entries.get(`auth:user:${w.member}`)).entry).toEqual(before);
    expect(await w.readTarget()).toBe(403);
  }, 120_000);

  /** Resolves once a transaction waits for the advisory lock under which marked bumps are made. */
  async function markedBumpWaiting(): Promise<void> {
    for (let attempt = 0; attempt < 600; attempt += 1) {
      const waiting = await sql(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
      if (waiting.length > 0) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error('no write waits for the marked bumps');
  }

  /**
   * A review's attack: a grant to the team (over 1 000 users, scope `user`, marked) while the
   * nesting (scope `user_groups`, marked) is held after its markers. The two moved different rows
   * by the same step: the grant's state, without the nesting, came out at the nesting's marker and
   * a read stored it over the marker, a hit after both commits. Now the grant waits for the
   * nesting's commit before its own bumps, and its markers count it.
   */
  /**
   * Holds `write` (a marked write of the member's groups) after its markers, posts a grant to the
   * team on b (over 1 000 users, marked too) and waits until it waits for the held write's commit;
   * a read then answers `during`. Releases, and answers both statuses.
   */
  async function grantToTeamWhileHeld(
    w: Awaited<ReturnType<typeof world>>,
    write: () => Promise<{ status: number }>,
    during: number,
  ): Promise<{ held: number; grant: number }> {
    const hold = holdAfterMarking(w.member);
    const held = write().then((res) => res);
    await hold.reached;
    const grant = caller(b, root)
      .post('/v1/admin/permission-grants/grant', { group_id: w.team, permission_id: permissionId('inbox.read') })
      .then((res) => res);
    await markedBumpWaiting();
    // A read while the grant waits: the access before the held write (a fill refused by its marker).
    expect(await w.readTarget()).toBe(during);
    hold.release();
    return { held: (await held).status, grant: (await grant).status };
  }

  it('a group grant reaching the same users while a nesting is held after its markers: both land, nothing stale after (found by a review)', async () => {
    const w = await world();
    expect(await w.readTarget()).toBe(403);
    expect(await grantToTeamWhileHeld(w, () => w.nest(), 403)).toEqual({ held: 200, grant: 201 });
    expect(await w.readTarget()).toBe(200);
    // Read through b, which stored it (an earlier test dropped the cache: each instance follows the
    // new epoch at its own poll).
    const stored = (await b.app.get(CacheEntries).get(`auth:user:${w.member}`)).entry;
    expect(stored?.version).toBe(await contextVersion(w.member));
    expect(stored?.json).toContain('inbox.read');
  }, 120_000);

  it('the same race on a removal: the member does not keep the removed access (found by a review)', async () => {
    const w = await world();
    expect((await w.nest()).status).toBe(200);
    expect(await w.readTarget()).toBe(200);
    const remove = () =>
      caller(a, root).post(`/v1/admin/groups/${w.parent}/members/remove`, { members: [{ group_id: w.team }] });
    expect(await grantToTeamWhileHeld(w, remove, 200)).toEqual({ held: 200, grant: 201 });
    expect(await w.readTarget()).toBe(403);
    expect((await w.effectiveRole()).role).toBe(3);
  }, 120_000);

  /**
   * A review's finding, kept as what is promised: a write that fails after its markers landed
   * leaves them ahead of the data (2^20 ahead: the users' entries are refused until they expire,
   * `CACHE_TTL_SECONDS`, docs/decisions.md), but nothing stale is ever answered.
   */
  it('a change rolled back after its markers: every read after it answers the database, before and after another write', async () => {
    const w = await world();
    expect((await w.effectiveRole()).role).toBe(3);
    let failing = true;
    a.app.get(GroupAccess).onUsersStale(() => {
      if (!failing) return Promise.resolve(true);
      failing = false;
      return Promise.reject(new Error('simulated: a failure after the markers'));
    });
    expect((await w.nest()).status).toBe(500);
    expect(await w.readTarget()).toBe(403);
    expect((await w.effectiveRole()).role).toBe(3);
    await caller(a, root).patch(`/v1/admin/users/${w.member}`, { display_name: 'Renamed after' }).expect(200);
    const detail = await caller(b, root).get(`/v1/admin/users/${w.member}`).expect(200);
    expect(detail.body.data).toMatchObject({ display_name: 'Renamed after', effective_role_id: 3 });
    expect(await w.readTarget()).toBe(403);
  }, 120_000);

  it('an authority permission on a group authority reaching over 1 000 users marks their entries stale too (found by a review)', async () => {
    const w = await world();
    expect((await w.nest()).status).toBe(200);
    expect(await w.readTarget()).toBe(200);
    const before = await stats();
    await caller(a, root)
      .post('/v1/admin/authority-permissions', {
        authority_id: w.heldAuthority,
        permission_id: permissionId('authorities.update'),
      })
      .expect(201);
    // Marked stale in the write, not 1 001 contexts rebuilt after it (100 000 ran past the budget).
    const entry = (await a.app.get(CacheEntries).get(`auth:user:${w.member}`)).entry;
    expect(entry?.json).toBe('');
    expect(await w.readTarget()).toBe(200);
    const loaded = (await b.app.get(CacheEntries).get(`auth:user:${w.member}`)).entry;
    expect(loaded?.json).toContain('authorities.update');
    const after = await stats();
    expect(after.after_commit_failures).toBe(before.after_commit_failures);
    expect(after.lost_writes).toBe(before.lost_writes);
  }, 120_000);
});
