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

  /** Revokes P's grant on `b`, held at its bump of P's member, and answers once it waits there. */
  async function heldRevoke(w: Awaited<ReturnType<typeof world>>) {
    const hold = await holdBumpOf(w.anchor.user.id);
    const revoke = caller(b, root)
      .post('/v1/admin/permission-grants/revoke', { group_id: w.parent, permission_id: permissionId('events.read') })
      .then((res) => res.status);
    const revokePid = await waitingFor(lockPid, 'the revoke');
    return { hold, revoke, revokePid };
  }

  it('a team nested under the group while its right is revoked: the member never keeps the right', async () => {
    const w = await world();
    await addMembers(a, root, w.team, [{ user_id: w.member.user.id }]);
    expect(await w.feed()).toBe(403);
    const held = await heldRevoke(w);
    const nest = caller(a, root)
      .post(`/v1/admin/groups/${w.parent}/members`, { members: [{ group_id: w.team }] })
      .then((res) => res.status);
    // The nesting waits for the revoke's commit instead of answering beside it.
    await waitingFor(held.revokePid, 'the nesting');
    expect(await w.feed()).toBe(403);
    await held.hold.release();
    expect([await held.revoke, await nest]).toEqual([200, 200]);
    expect(await w.feed()).toBe(403);
  });

  it('a user added to the group while its right is revoked: the new member never keeps the right', async () => {
    const w = await world();
    const held = await heldRevoke(w);
    const add = caller(a, root)
      .post(`/v1/admin/groups/${w.parent}/members`, { members: [{ user_id: w.member.user.id }] })
      .then((res) => res.status);
    await waitingFor(held.revokePid, 'the member added');
    expect(await w.feed()).toBe(403);
    await held.hold.release();
    expect([await held.revoke, await add]).toEqual([200, 200]);
    expect(await w.feed()).toBe(403);
  });

  it('a user joining a team while the team leaves the group: the new member does not keep the group’s right', async () => {
    const w = await world();
    await addMembers(a, root, w.parent, [{ group_id: w.team }]);
    const early = await actor('viewer');
    await addMembers(a, root, w.team, [{ user_id: early.user.id }]);
    // The removal bumps the team's members: held at the bump of its earlier member.
    const hold = await holdBumpOf(early.user.id, 'user_groups');
    const removal = caller(b, root)
      .post(`/v1/admin/groups/${w.parent}/members/remove`, { members: [{ group_id: w.team }] })
      .then((res) => res.status);
    const removalPid = await waitingFor(lockPid, 'the removal');
    const join = caller(a, root)
      .post(`/v1/admin/groups/${w.team}/members`, { members: [{ user_id: w.member.user.id }] })
      .then((res) => res.status);
    await waitingFor(removalPid, 'the member joining the team');
    expect(await w.feed()).toBe(403);
    await hold.release();
    expect([await removal, await join]).toEqual([200, 200]);
    expect(await w.feed()).toBe(403);
  });

  it('a user joining a team nested under the group while the group is deleted: the new member does not keep its right', async () => {
    const w = await world();
    await addMembers(a, root, w.parent, [{ group_id: w.team }]);
    const hold = await holdBumpOf(w.anchor.user.id, 'user_groups');
    const deletion = caller(b, root)
      .delete(`/v1/admin/groups/${w.parent}`)
      .then((res) => res.status);
    const deletionPid = await waitingFor(lockPid, 'the deletion');
    const join = caller(a, root)
      .post(`/v1/admin/groups/${w.team}/members`, { members: [{ user_id: w.member.user.id }] })
      .then((res) => res.status);
    await waitingFor(deletionPid, 'the member joining the team');
    expect(await w.feed()).toBe(403);
    await hold.release();
    expect([await deletion, await join]).toEqual([200, 200]);
    expect(await w.feed()).toBe(403);
  });

  it('a grant to the group while a user joins it: the new member holds the right at once', async () => {
    const w = await world();
    await caller(a, root)
      .post('/v1/admin/permission-grants/revoke', { group_id: w.parent, permission_id: permissionId('events.read') })
      .expect(200);
    const hold = await holdBumpOf(w.anchor.user.id);
    const grant = caller(b, root)
      .post('/v1/admin/permission-grants/grant', { group_id: w.parent, permission_id: permissionId('events.read') })
      .then((res) => res.status);
    const grantPid = await waitingFor(lockPid, 'the grant');
    const add = caller(a, root)
      .post(`/v1/admin/groups/${w.parent}/members`, { members: [{ user_id: w.member.user.id }] })
      .then((res) => res.status);
    await waitingFor(grantPid, 'the member added');
    await hold.release();
    expect([await grant, await add]).toEqual([201, 200]);
    expect(await w.feed()).toBe(200);
  });
});
