import pg from 'pg';
import { actor, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { testDatabaseUrl, testCachePrefix } from '../support/test-env.js';
import { addMembers, createGroup } from '../support/groups.js';
import { caller } from '../support/requests.js';

/*
 * A change of what a group confers reads the users it reaches; a change of its members (or of a
 * group below it) changes who that is. Found by an independent review: the two took no lock in
 * common, so a member who joined while a revoke was in flight kept the revoked right in the cache.
 * Now the reach read holds every group below `FOR SHARE` until its write ends, and a change of
 * members waits for it (or it for them). Two instances share one cache: `a` writes the change of
 * members, `b` revokes and serves the member's reads. The revoke is held before its commit by a
 * transaction of this spec holding a projection row it bumps last.
 */
describe('a group change and a change of who it reaches, at the same time', () => {
  let a: TestApp;
  let b: TestApp;
  let root: Caller;
  let lock: pg.Client;
  let lockPid = 0;
  beforeAll(async () => {
    const prefix = testCachePrefix('group-reach-lock');
    [a, b] = await Promise.all([
      startApp({ widgets: false, cachePrefix: prefix }),
      startApp({ widgets: false, cachePrefix: prefix }),
    ]);
    root = await actor('super_admin');
    lock = new pg.Client({ connectionString: testDatabaseUrl() });
    await lock.connect();
    lockPid = Number((await lock.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
  });
  afterAll(async () => {
    await lock?.end();
    await Promise.all([a?.close(), b?.close()]);
  });

  /** Resolves with the pid of a backend that waits for `pid`'s locks (a gate, not a timer). */
  async function waitingFor(pid: number, what: string): Promise<number> {
    for (let attempt = 0; attempt < 5000; attempt += 1) {
      const { rows } = await lock.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)) LIMIT 1',
        [pid],
      );
      if (rows[0] !== undefined) return rows[0].pid;
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error(`${what} never waited`);
  }

  /**
   * Holds the next write bumping `userId`'s projection `scope` (`user` for a change of a group's
   * rights, `user_groups` for one of its members) at that bump, until `release`.
   */
  async function holdBumpOf(userId: number, scope = 'user'): Promise<{ release: () => Promise<void> }> {
    await lock.query('BEGIN');
    await lock.query(
      `INSERT INTO projection_versions (scope, id, version) VALUES ($2, $1, 1)
       ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version`,
      [userId, scope],
    );
    return { release: async () => void (await lock.query('COMMIT')) };
  }

  /** A parent group P granted `events.read` with one direct member (the revoke bumps it), and a team X. */
  async function world() {
    const parent = await createGroup(a, root);
    const anchor = await actor('viewer');
    await addMembers(a, root, parent, [{ user_id: anchor.user.id }]);
    await caller(a, root)
      .post('/v1/admin/permission-grants/grant', { group_id: parent, permission_id: permissionId('events.read') })
      .expect(201);
    const team = await createGroup(a, root);
    const member = await actor('viewer');
    const asMember = { authorization: member.auth };
    const feed = async (): Promise<number> => (await b.http().get('/v1/admin/events').set(asMember)).status;
    return { parent, anchor, team, member, feed };
  }
  type World = Awaited<ReturnType<typeof world>>;

  const post = (t: TestApp, path: string, body: object) => (): Promise<number> =>
    caller(t, root)
      .post(path, body)
      .then((res) => res.status);
  const grantAt = (w: World, route: 'grant' | 'revoke') =>
    post(b, `/v1/admin/permission-grants/${route}`, { group_id: w.parent, permission_id: permissionId('events.read') });
  const membersOf = (group: number, member: object) =>
    post(a, `/v1/admin/groups/${group}/members`, { members: [member] });

  /**
   * Sends `first` (on b), held at its bump of `held`'s projection `scope`; then `second` (on a),
   * and shows it waits for the first; the member's feed read meanwhile answers 403 (nothing of
   * either yet). Releases, and answers both statuses.
   */
  async function race(
    w: World,
    held: { user: number; scope?: string },
    first: () => Promise<number>,
    second: () => Promise<number>,
  ): Promise<[number, number]> {
    const hold = await holdBumpOf(held.user, held.scope);
    const firstDone = first();
    const firstPid = await waitingFor(lockPid, 'the first write');
    const secondDone = second();
    await waitingFor(firstPid, 'the second write');
    expect(await w.feed()).toBe(403);
    await hold.release();
    return [await firstDone, await secondDone];
  }

  it('a team nested under the group while its right is revoked: the member never keeps the right', async () => {
    const w = await world();
    await addMembers(a, root, w.team, [{ user_id: w.member.user.id }]);
    expect(await w.feed()).toBe(403);
    const nest = membersOf(w.parent, { group_id: w.team });
    expect(await race(w, { user: w.anchor.user.id }, grantAt(w, 'revoke'), nest)).toEqual([200, 200]);
    expect(await w.feed()).toBe(403);
  });

  it('a user added to the group while its right is revoked: the new member never keeps the right', async () => {
    const w = await world();
    const add = membersOf(w.parent, { user_id: w.member.user.id });
    expect(await race(w, { user: w.anchor.user.id }, grantAt(w, 'revoke'), add)).toEqual([200, 200]);
    expect(await w.feed()).toBe(403);
  });

  it('a user joining a team while the team leaves the group: the new member does not keep the group’s right', async () => {
    const w = await world();
    await addMembers(a, root, w.parent, [{ group_id: w.team }]);
    const early = await actor('viewer');
    await addMembers(a, root, w.team, [{ user_id: early.user.id }]);
    // The removal bumps the team's members: held at the bump of its earlier member.
    const removal = post(b, `/v1/admin/groups/${w.parent}/members/remove`, { members: [{ group_id: w.team }] });
    const join = membersOf(w.team, { user_id: w.member.user.id });
    expect(await race(w, { user: early.user.id, scope: 'user_groups' }, removal, join)).toEqual([200, 200]);
    expect(await w.feed()).toBe(403);
  });

  it('a user joining a team nested under the group while the group is deleted: the new member does not keep its right', async () => {
    const w = await world();
    await addMembers(a, root, w.parent, [{ group_id: w.team }]);
    const deletion = () =>
      caller(b, root)
        .delete(`/v1/admin/groups/${w.parent}`)
        .then((res) => res.status);
    const join = membersOf(w.team, { user_id: w.member.user.id });
    expect(await race(w, { user: w.anchor.user.id, scope: 'user_groups' }, deletion, join)).toEqual([200, 200]);
    expect(await w.feed()).toBe(403);
  });

  it('a grant to the group while a user joins it: the new member holds the right at once', async () => {
    const w = await world();
    expect(await grantAt(w, 'revoke')()).toBe(200);
    const add = membersOf(w.parent, { user_id: w.member.user.id });
    expect(await race(w, { user: w.anchor.user.id }, grantAt(w, 'grant'), add)).toEqual([201, 200]);
    expect(await w.feed()).toBe(200);
  });
});
