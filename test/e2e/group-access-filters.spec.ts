import { permissionId, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { addMembers, createGroup, trackedActors } from '../support/groups.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

/**
 * `group_id=` on `/devices/{id}/access` (part 6.13): only the ways a group holds; and the access
 * timeline's causes through groups.
 */

const { actor } = trackedActors();
const READ = 'authorities.read';

interface Row {
  user_id: number;
  allowed_by: { decided_by: string; group_id: number | null }[];
}

describe('the device question narrowed to one group', () => {
  const app = useApp({ widgets: false, cachePrefix: testCachePrefix('group-access-filters') });
  const call = (who: Caller = app.root) => caller(app.t, who);

  const group = (body: object = {}): Promise<number> => createGroup(app.t, app.root, body);
  const add = async (groupId: number, members: object[]): Promise<void> => {
    await addMembers(app.t, app.root, groupId, members);
  };
  const listed = async (device: number, query: string): Promise<Row[]> =>
    (await call().get(`/v1/admin/devices/${device}/access?permission=${READ}&page_size=100&${query}`).expect(200)).body
      .data;
  const users = (rows: readonly Row[]): number[] => rows.map((row) => row.user_id);

  it('keeps users a way of that group allows (its authority, its grant, the role it confers), now and at=', async () => {
    const [own, viaAuthority, viaBoth, viaRole] = [
      await actor('operator'),
      await actor('operator'),
      await actor('operator'),
      await actor('viewer'),
    ];
    const device = (await createDevice()).id;
    await createAuthority(device, own.user.id, { permissions: [READ] });
    const team = await group();
    const other = await group();
    const admins = await group({ role_id: 2 });
    const authority = (await call().post('/v1/admin/authorities', { device_id: device, group_id: team }).expect(201))
      .body.data.id;
    await call()
      .post('/v1/admin/authority-permissions', { authority_id: authority, permission_id: permissionId(READ) })
      .expect(201);
    await call()
      .post('/v1/admin/permission-grants/grant', { group_id: other, permission_id: permissionId(READ) })
      .expect(201);
    await add(team, [{ user_id: viaAuthority.user.id }, { user_id: viaBoth.user.id }]);
    await add(other, [{ user_id: viaBoth.user.id }]);
    await add(admins, [{ user_id: viaRole.user.id }]);
    const [moment] = await sql<{ at: Date }>('SELECT clock_timestamp() AS at');
    const at = moment?.at ?? new Date();

    const byTeam = await listed(device, `group_id=${team}&count=exact`);
    expect(users(byTeam)).toEqual([viaAuthority.user.id, viaBoth.user.id].sort((a, b) => a - b));
    // Every way of a listed user is shown, as with via=.
    const both = byTeam.find((row) => row.user_id === viaBoth.user.id);
    expect(both?.allowed_by.map((way) => [way.decided_by, way.group_id])).toEqual(
      expect.arrayContaining([
        ['group_permission_grant', other],
        ['group_authority_permission', team],
      ]),
    );
    expect(users(await listed(device, `group_id=${other}`))).toEqual([viaBoth.user.id]);
    expect(users(await listed(device, `group_id=${admins}`))).toEqual([viaRole.user.id]);
    expect(users(await listed(device, `group_id=${team}&via=group_permission_grant`))).toEqual([]);
    expect(users(await listed(device, `group_id=${other}&via=group_permission_grant`))).toEqual([viaBoth.user.id]);
    // A group that holds nothing here: nobody (not a 404: it is a filter).
    expect(await listed(device, `group_id=${await group()}`)).toEqual([]);
    expect(await listed(device, 'group_id=999999999999')).toEqual([]);

    // The member leaves: gone from the team's list at once; the moment before still lists it.
    await call()
      .post(`/v1/admin/groups/${team}/members/remove`, { members: [{ user_id: viaAuthority.user.id }] })
      .expect(200);
    expect(users(await listed(device, `group_id=${team}`))).toEqual([viaBoth.user.id]);
    expect(users(await listed(device, `group_id=${team}&at=${encodeURIComponent(at.toISOString())}`))).toEqual(
      [viaAuthority.user.id, viaBoth.user.id].sort((a, b) => a - b),
    );
  });

  it('a nested group deleted, or given a role: the preview and the events name the device rights its members lose or gain through the group above (found by the property test)', async () => {
    const [member, plain] = [await actor('operator'), await actor('member')];
    const device = (await createDevice()).id;
    const top = await group();
    const nested = await group();
    const authority = (await call().post('/v1/admin/authorities', { device_id: device, group_id: top }).expect(201))
      .body.data.id;
    await call()
      .post('/v1/admin/authority-permissions', { authority_id: authority, permission_id: permissionId(READ) })
      .expect(201);
    await add(top, [{ group_id: nested }]);
    await add(nested, [{ user_id: member.user.id }, { user_id: plain.user.id }]);
    const onDevice = (changes: { device_id: number | null; user_id: number; change: string }[]) =>
      changes.filter((change) => change.device_id === device).map((change) => [change.user_id, change.change]);

    const preview = await call().delete(`/v1/admin/groups/${nested}?dry_run=true`).expect(200);
    expect(onDevice(preview.body.data.access_changes)).toEqual([[member.user.id, 'lost']]);
    const deleted = await call().delete(`/v1/admin/groups/${nested}`).set('X-Request-Id', `del-${nested}`).expect(200);
    expect(deleted.body.data.is_deleted).toBe(true);
    const events = await sql<{ type: string; user_id: string; device_id: string | null }>(
      `SELECT type, data->>'user_id' AS user_id, data->>'device_id' AS device_id FROM events
       WHERE request_id = $1 AND type LIKE 'access.%'`,
      [`del-${nested}`],
    );
    expect(
      events.filter((row) => Number(row.device_id) === device).map((row) => [Number(row.user_id), row.type]),
    ).toEqual([[member.user.id, 'access.lost']]);
    await call().post(`/v1/admin/groups/${nested}/restore`).expect(200);
    // The member-role user gains the device right once the nested group gives it an admin-access role.
    const role = await call().patch(`/v1/admin/groups/${nested}?dry_run=true`, { role_id: 3 }).expect(200);
    expect(onDevice(role.body.data.access_changes)).toEqual([[plain.user.id, 'gained']]);
  });

  it('refuses a group_id that is not a positive integer with the envelope', async () => {
    const device = (await createDevice()).id;
    for (const bad of ['0', '-1', 'abc', '1.5', '1e3', '99999999999999999999']) {
      const res = await call().get(`/v1/admin/devices/${device}/access?permission=${READ}&group_id=${bad}`).expect(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(JSON.stringify(res.body.error.details)).toContain('group_id');
    }
  });
  it('the access timeline names the group and the group change behind each gain and loss', async () => {
    const [u1, u2, u3] = [await actor('operator'), await actor('operator'), await actor('member')];
    const device = (await createDevice()).id;
    const team = await group();
    const inner = await group();
    const operators = await group({ role_id: 3 });
    const authority = (await call().post('/v1/admin/authorities', { device_id: device, group_id: team }).expect(201))
      .body.data.id;
    const ap = (
      await call()
        .post('/v1/admin/authority-permissions', { authority_id: authority, permission_id: permissionId(READ) })
        .expect(201)
    ).body.data.id;
    // u3's own authority allows nothing while its role (member) has no admin access.
    await createAuthority(device, u3.user.id, { permissions: [READ] });
    await add(team, [{ user_id: u1.user.id }]);
    await add(inner, [{ user_id: u2.user.id }]);
    await add(team, [{ group_id: inner }]);
    await call().delete(`/v1/admin/groups/${inner}`).expect(200);
    await call().post(`/v1/admin/groups/${inner}/restore`).expect(200);
    await call()
      .post(`/v1/admin/groups/${team}/members/remove`, { members: [{ user_id: u1.user.id }] })
      .expect(200);
    await add(operators, [{ user_id: u3.user.id }]);
    await call().delete(`/v1/admin/authority-permissions/${ap}`).expect(200);

    const timeline = async (user: number) =>
      (
        await call()
          .get(`/v1/admin/devices/${device}/access-timeline?user_id=${user}&permission=${READ}&sort=occurred_at:asc`)
          .expect(200)
      ).body.data as { change: string; cause: string; group_id: number | null; actor_id: number; event_id: string }[];
    const told = (rows: Awaited<ReturnType<typeof timeline>>) =>
      rows.map((row) => [row.change, row.cause, row.group_id]);
    const one = await timeline(u1.user.id);
    expect(told(one)).toEqual([
      ['gained', 'group_member_added', team],
      ['lost', 'group_member_removed', team],
    ]);
    expect(one.every((row) => row.actor_id === app.root.user.id && row.event_id !== null)).toBe(true);
    expect(told(await timeline(u2.user.id))).toEqual([
      ['gained', 'group_member_added', team],
      ['lost', 'group_deleted', team],
      ['gained', 'group_restored', team],
      ['lost', 'permission_revoked', team],
    ]);
    // Its own authority, made usable by the role a group gave it.
    expect(told(await timeline(u3.user.id))).toEqual([['gained', 'group_member_added', operators]]);
  });
});
