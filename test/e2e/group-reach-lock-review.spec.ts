import pg from 'pg';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { testDatabaseUrl, testCachePrefix } from '../support/test-env.js';
import { addMembers, createGroup } from '../support/groups.js';
import { caller } from '../support/requests.js';
import { scim } from '../support/scim.js';

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const NESTING_LOCK = '7306020240617260018';

/*
 * An independent review's attacks on the reach lock (group-reach-lock.spec), kept as tests: the
 * authority permission's rules judged on a reach read before its write, a grant or authority
 * written past a deletion it waited for, the SCIM nesting's deadlock with an API nesting (retried),
 * and the access event of a member who joined while an authority permission was granted.
 */
describe('the group reach lock: a review’s attacks', () => {
  let a: TestApp;
  let b: TestApp;
  let root: Caller;
  let lock: pg.Client;
  let lockPid = 0;
  beforeAll(async () => {
    const prefix = testCachePrefix('group-reach-review');
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

  /** Resolves with the pids of backends that wait for `pid`'s locks, once there are `count` (a gate, not a timer). */
  async function waitingFor(pid: number, what: string, count = 1): Promise<number[]> {
    for (let attempt = 0; attempt < 200000; attempt += 1) {
      const { rows } = await lock.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)) ORDER BY pid',
        [pid],
      );
      if (rows.length >= count) return rows.map((row) => row.pid);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const { rows } = await lock.query(
      "SELECT pid, state, wait_event_type, wait_event, pg_blocking_pids(pid) AS by, left(query, 120) AS q FROM pg_stat_activity WHERE datname = current_database() AND query NOT LIKE 'LISTEN%'",
    );
    throw new Error(`${what} never waited ` + JSON.stringify(rows, null, 1));
  }

  it('POST /authority-permissions judges rank and self on a reach read outside its transaction: a user joining meanwhile is not judged', async () => {
    const operator = await actor('operator');
    const device = await createDevice();
    await createAuthority(device.id, operator.user.id, {
      permissions: ['authority_permissions.grant', 'authorities.read'],
    });
    const team = await createGroup(a, root);
    const viewer = await createUser({ role: 'viewer' });
    await addMembers(a, root, team, [{ user_id: viewer.id }]);
    const authority = (
      await caller(a, root).post('/v1/admin/authorities', { device_id: device.id, group_id: team }).expect(201)
    ).body.data.id as number;
    // Warm b up (its first request loads the operator's context): a dry run, allowed (only a viewer in the team).
    await caller(b, operator)
      .post('/v1/admin/authority-permissions?dry_run=true', {
        authority_id: authority,
        permission_id: permissionId('authorities.read'),
      })
      .expect(200);
    // Hold the authority's row: the grant's transaction waits at its first statement (lockAuthorities).
    await lock.query('BEGIN');
    await lock.query('SELECT id FROM authorities WHERE id = $1 FOR UPDATE', [authority]);
    const grant = caller(b, operator)
      .post('/v1/admin/authority-permissions', {
        authority_id: authority,
        permission_id: permissionId('authorities.read'),
      })
      .then((res) => ({ status: res.status, code: res.body.error?.code as string | undefined }));
    await Promise.race([
      waitingFor(lockPid, 'the grant'),
      grant.then((r) => {
        throw new Error('grant answered early: ' + JSON.stringify(r));
      }),
    ]);
    // An admin (outranks the operator) joins the team while the grant is in flight.
    const admin = await createUser({ role: 'admin' });
    await addMembers(a, root, team, [{ user_id: admin.id }]);
    await lock.query('COMMIT');
    const answered = await grant;
    const [held] = await sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM authority_permissions WHERE authority_id = $1 AND revoked_at IS NULL',
      [authority],
    );
    // Judged at the write: 403 ROLE_ESCALATION_FORBIDDEN (the operator does not outrank the admin), nothing granted.
    expect({ answered, held: held?.n }).toEqual({
      answered: { status: 403, code: 'ROLE_ESCALATION_FORBIDDEN' },
      held: 0,
    });
  });

  it('a grant to a group being deleted waits for the deletion, then writes a live grant on the deleted group', async () => {
    const parent = await createGroup(a, root);
    const anchor = await actor('viewer');
    await addMembers(a, root, parent, [{ user_id: anchor.user.id }]);
    // Hold the deletion at its bump of the member's user_groups version.
    await lock.query('BEGIN');
    await lock.query(
      `INSERT INTO projection_versions (scope, id, version) VALUES ('user_groups', $1, 1)
       ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version`,
      [anchor.user.id],
    );
    const deletion = caller(b, root)
      .delete(`/v1/admin/groups/${parent}`)
      .then((res) => res.status);
    const [deletionPid] = await waitingFor(lockPid, 'the deletion');
    const grant = caller(a, root)
      .post('/v1/admin/permission-grants/grant', { group_id: parent, permission_id: permissionId('events.read') })
      .then((res) => ({ status: res.status, code: res.body.error?.code as string | undefined }));
    await waitingFor(deletionPid ?? 0, 'the grant');
    const device = await createDevice();
    const authorityCreate = caller(a, root)
      .post('/v1/admin/authorities', { device_id: device.id, group_id: parent })
      .then((res) => ({ status: res.status, code: res.body.error?.code as string | undefined }));
    await waitingFor(deletionPid ?? 0, 'the authority', 2);
    await lock.query('COMMIT');
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
    await lock.query('BEGIN');
    await lock.query('SELECT pg_advisory_xact_lock($1::bigint)', [NESTING_LOCK]);
    const api = caller(a, root)
      .post(`/v1/admin/groups/${q}/members`, { members: [{ group_id: y }] })
      .then((res) => ({ status: res.status, result: res.body.data?.results?.[0]?.status as string | undefined }));
    await waitingFor(lockPid, 'the API nesting', 1);
    const viaScim = scim(b, root)
      .patch(`/Groups/${g}`, {
        schemas: [PATCH],
        Operations: [{ op: 'add', path: 'members', value: [{ value: String(x), type: 'Group' }] }],
      })
      .then((res) => res.status);
    await waitingFor(lockPid, 'the SCIM nesting', 2);
    await lock.query('COMMIT');
    const answered = { api: await api, scim: await viaScim };
    expect(answered).toEqual({ api: { status: 200, result: 'added' }, scim: 200 });
  });

  it('access.gained of a member who joins a team while an authority permission is granted to the team’s authority', async () => {
    const operator = await actor('operator');
    const device = await createDevice();
    await createAuthority(device.id, operator.user.id, {
      permissions: ['authority_permissions.grant', 'authorities.read', 'authorities.update'],
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
        permission_id: permissionId('authorities.update'),
      })
      .expect(200);
    expect((dry.body.data.access_changes as { user_id: number }[]).map((x) => x.user_id)).toEqual([early.id]);
    await lock.query('BEGIN');
    await lock.query('SELECT id FROM authorities WHERE id = $1 FOR UPDATE', [authority]);
    const grant = caller(b, operator)
      .post('/v1/admin/authority-permissions', {
        authority_id: authority,
        permission_id: permissionId('authorities.update'),
      })
      .then((res) => res.status);
    await waitingFor(lockPid, 'the grant');
    const late = await createUser({ role: 'viewer' });
    await addMembers(a, root, team, [{ user_id: late.id }]);
    await lock.query('COMMIT');
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
