import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { scim } from '../support/scim.js';
import { startApp, type TestApp } from '../support/app.js';
import { testCachePrefix } from '../support/test-env.js';
import { heldWrites, type HeldWrites } from '../support/held-writes.js';
import { addMembers, createGroup } from '../support/groups.js';
import { caller } from '../support/requests.js';

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const NESTING_LOCK = '7306020240617260018';

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
  let held: HeldWrites;
  beforeAll(async () => {
    const prefix = testCachePrefix('group-reach-lock');
    [a, b] = await Promise.all([
      startApp({ widgets: false, cachePrefix: prefix }),
      startApp({ widgets: false, cachePrefix: prefix }),
    ]);
    root = await actor('super_admin');
    held = await heldWrites();
  });
  afterAll(async () => {
    await held?.end();
    await Promise.all([a?.close(), b?.close()]);
  });

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
   * Sends `first` (on b), held at its bump of `bumped`'s projection `scope`; then `second` (on a),
   * and shows it waits for the first; the member's feed read meanwhile answers 403 (nothing of
   * either yet). Releases, and answers both statuses.
   */
  async function race(
    w: World,
    bumped: { user: number; scope?: string },
    first: () => Promise<number>,
    second: () => Promise<number>,
  ): Promise<[number, number]> {
    const hold = await held.holdBumpOf(bumped.user, bumped.scope);
    const firstDone = first();
    const [firstPid = 0] = await held.waitingFor(held.pid, 'the first write');
    const secondDone = second();
    await held.waitingFor(firstPid, 'the second write');
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

  // An independent review's attacks on the lock, kept.
  /**
   * An operator holding `authority_permissions.grant` and `permissions` on a device, a team with
   * one viewer (`early`) and the team's authority on the device; `b` has answered a dry run of
   * granting `permission` on it (its first request loads the operator's context).
   */
  async function teamAuthority(permissions: string[], permission: string) {
    const operator = await actor('operator');
    const device = await createDevice();
    await createAuthority(device.id, operator.user.id, {
      permissions: ['authority_permissions.grant', ...permissions],
    });
    const team = await createGroup(a, root);
    const early = await createUser({ role: 'viewer' });
    await addMembers(a, root, team, [{ user_id: early.id }]);
    const authority = (
      await caller(a, root).post('/v1/admin/authorities', { device_id: device.id, group_id: team }).expect(201)
    ).body.data.id as number;
    const dry = await caller(b, operator)
      .post('/v1/admin/authority-permissions?dry_run=true', {
        authority_id: authority,
        permission_id: permissionId(permission),
      })
      .expect(200);
    /** Grants `permission` on the team's authority on b, held before its first statement (the authority's lock). */
    const heldGrant = async () => {
      await held.client.query('BEGIN');
      await held.client.query('SELECT id FROM authorities WHERE id = $1 FOR UPDATE', [authority]);
      const grant = caller(b, operator)
        .post('/v1/admin/authority-permissions', { authority_id: authority, permission_id: permissionId(permission) })
        .then((res) => ({ status: res.status, code: res.body.error?.code as string | undefined }));
      await held.waitingFor(held.pid, 'the grant');
      // In an object: an async function answering the promise itself would wait for it.
      return { answer: grant };
    };
    return { operator, device, team, early, authority, dry, heldGrant };
  }

  it('POST /authority-permissions judges rank and self on a reach read outside its transaction: a user joining meanwhile is not judged', async () => {
    // A dry run on b first, allowed: only a viewer in the team.
    const { team, authority, heldGrant } = await teamAuthority(['authorities.read'], 'authorities.read');
    const grant = (await heldGrant()).answer;
    // An admin (outranks the operator) joins the team while the grant is in flight.
    const admin = await createUser({ role: 'admin' });
    await addMembers(a, root, team, [{ user_id: admin.id }]);
    await held.client.query('COMMIT');
    const answered = await grant;
    const [live] = await sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM authority_permissions WHERE authority_id = $1 AND revoked_at IS NULL',
      [authority],
    );
    // Judged at the write: 403 ROLE_ESCALATION_FORBIDDEN (the operator does not outrank the admin), nothing granted.
    expect({ answered, held: live?.n }).toEqual({
      answered: { status: 403, code: 'ROLE_ESCALATION_FORBIDDEN' },
      held: 0,
    });
  });

  it('a grant to a group being deleted waits for the deletion, then writes a live grant on the deleted group', async () => {
    const parent = await createGroup(a, root);
    const anchor = await actor('viewer');
    await addMembers(a, root, parent, [{ user_id: anchor.user.id }]);
    // Hold the deletion at its bump of the member's user_groups version.
    const hold = await held.holdBumpOf(anchor.user.id, 'user_groups');
    const deletion = caller(b, root)
      .delete(`/v1/admin/groups/${parent}`)
      .then((res) => res.status);
    const [deletionPid] = await held.waitingFor(held.pid, 'the deletion');
    const grant = caller(a, root)
      .post('/v1/admin/permission-grants/grant', { group_id: parent, permission_id: permissionId('events.read') })
      .then((res) => ({ status: res.status, code: res.body.error?.code as string | undefined }));
    await held.waitingFor(deletionPid ?? 0, 'the grant');
    const device = await createDevice();
    const authorityCreate = caller(a, root)
      .post('/v1/admin/authorities', { device_id: device.id, group_id: parent })
      .then((res) => ({ status: res.status, code: res.body.error?.code as string | undefined }));
    await held.waitingFor(deletionPid ?? 0, 'the authority', 2);
    await hold.release();
    const deleted = await deletion;
    const answered = await grant;
    const authorityAnswered = await authorityCreate;
    const [authorities] = await sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM authorities WHERE group_id = $1 AND NOT is_deleted',
      [parent],
    );
    const [row] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM permission_grants g JOIN groups gr ON gr.id = g.group_id
       WHERE g.group_id = $1 AND g.revoked_at IS NULL AND gr.is_deleted`,
      [parent],
    );
    expect({
      deleted: [200, 204].includes(deleted),
      answered,
      liveGrantsOnDeletedGroup: row?.n,
      authorityAnswered,
      authoritiesOfDeletedGroup: authorities?.n,
    }).toEqual({
      deleted: true,
      answered: { status: 404, code: 'GROUP_NOT_FOUND' },
      liveGrantsOnDeletedGroup: 0,
      authorityAnswered: { status: 404, code: 'GROUP_NOT_FOUND' },
      authoritiesOfDeletedGroup: 0,
    });
  });

  it('a SCIM PATCH nesting a group and an API nesting above it, at once: the deadlock is retried, both succeed', async () => {
    await sql('INSERT INTO permission_grants (user_id, permission_id, granted_by) VALUES ($1, $2, NULL)', [
      root.user.id,
      permissionId('scim.provision'),
    ]).catch(() => undefined);
    const g = await createGroup(a, root);
    const y = await createGroup(a, root);
    const q = await createGroup(a, root);
    const x = await createGroup(a, root);
    await addMembers(a, root, y, [{ group_id: g }]);
    // Hold the nesting lock: both nestings queue behind it, the API one first.
    await held.client.query('BEGIN');
    await held.client.query('SELECT pg_advisory_xact_lock($1::bigint)', [NESTING_LOCK]);
    const api = caller(a, root)
      .post(`/v1/admin/groups/${q}/members`, { members: [{ group_id: y }] })
      .then((res) => ({ status: res.status, result: res.body.data?.results?.[0]?.status as string | undefined }));
    await held.waitingFor(held.pid, 'the API nesting', 1);
    const viaScim = scim(b, root)
      .patch(`/Groups/${g}`, {
        schemas: [PATCH],
        Operations: [{ op: 'add', path: 'members', value: [{ value: String(x), type: 'Group' }] }],
      })
      .then((res) => res.status);
    await held.waitingFor(held.pid, 'the SCIM nesting', 2);
    await held.client.query('COMMIT');
    const answered = { api: await api, scim: await viaScim };
    expect(answered).toEqual({ api: { status: 200, result: 'added' }, scim: 200 });
  });

  it('access.gained of a member who joins a team while an authority permission is granted to the team’s authority', async () => {
    const { device, team, early, authority, dry, heldGrant } = await teamAuthority(
      ['authorities.read', 'authorities.update'],
      'authorities.update',
    );
    expect((dry.body.data.access_changes as { user_id: number }[]).map((x) => x.user_id)).toEqual([early.id]);
    const grant = (await heldGrant()).answer.then((answer) => answer.status);
    const late = await createUser({ role: 'viewer' });
    await addMembers(a, root, team, [{ user_id: late.id }]);
    await held.client.query('COMMIT');
    const status = await grant;
    const gained = async (userId: number): Promise<number> =>
      (
        await sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM events WHERE type = 'access.gained' AND (data->>'user_id')::bigint = $1
             AND data->>'permission_code' = 'authorities.update' AND (data->>'device_id')::bigint = $2`,
          [userId, device.id],
        )
      )[0]?.n ?? -1;
    const [holds] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM group_memberships m JOIN authorities a ON a.group_id = m.group_id
         JOIN authority_permissions ap ON ap.authority_id = a.id AND ap.revoked_at IS NULL
       WHERE m.user_id = $1 AND m.removed_at IS NULL AND a.id = $2`,
      [late.id, authority],
    );
    // Both members hold authorities.update on the device through the team; each should have its access.gained.
    expect({
      status,
      lateHolds: holds?.n,
      earlyGained: await gained(early.id),
      lateGained: await gained(late.id),
    }).toEqual({
      status: 201,
      lateHolds: 1,
      earlyGained: 1,
      lateGained: 1,
    });
  });
});
