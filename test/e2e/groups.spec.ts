import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { actor, createUser, permissionId, tokenFor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';
import { unique } from '../support/groups.js';
import { AccessExpiryAnnouncer } from '../../src/access/access-expiry-announcer.js';
import { createAuthority, createDevice } from '../support/devices.js';

const realNow = Date.now;

describe('groups (part 6.18) and groups in the rules of part 5', () => {
  afterEach(() => jest.restoreAllMocks());
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  async function group(body: Record<string, unknown> = {}, by: Caller = root): Promise<number> {
    const created = await caller(t, by)
      .post('/v1/admin/groups', { name: unique('team'), ...body })
      .expect(201);
    return created.body.data.id as number;
  }

  function add(groupId: number, members: object[], by: { auth: string } = root, extra: object = {}) {
    return caller(t, by).post(`/v1/admin/groups/${groupId}/members`, { members, ...extra });
  }

  describe('the resource', () => {
    it('create → 201 with Location and the contract fields; names are unique case-insensitively; an audit event', async () => {
      const name = unique('Night operators');
      const created = await caller(t, root)
        .post('/v1/admin/groups', { name, description: 'building B', role_id: 3, external_id: `ext-${name}` })
        .expect(201);
      const data = created.body.data;
      expect(Object.keys(data)).toEqual([
        'id',
        'name',
        'description',
        'role_id',
        'external_id',
        'member_count',
        'created_at',
        'updated_at',
        'created_by',
        'updated_by',
        'is_deleted',
        'deleted_at',
        'deleted_by',
      ]);
      expect(data).toMatchObject({
        name,
        description: 'building B',
        role_id: 3,
        member_count: 0,
        created_by: root.user.id,
      });
      expect(created.headers.location).toBe(`/v1/admin/groups/${data.id}`);
      const taken = await caller(t, root).post('/v1/admin/groups', { name: name.toUpperCase() }).expect(409);
      expect(taken.body.error).toMatchObject({ code: 'GROUP_NAME_TAKEN', details: { name: name.toUpperCase() } });
      const external = await caller(t, root)
        .post('/v1/admin/groups', { name: unique('other'), external_id: `ext-${name}` })
        .expect(409);
      expect(external.body.error.code).toBe('EXTERNAL_ID_TAKEN');
      const [event] = await sql<{ action: string; actor_id: number }>(
        `SELECT action, actor_id FROM audit_events WHERE resource_type = 'group' AND resource_id = $1`,
        [String(data.id)],
      );
      expect(event).toMatchObject({ action: 'group.create', actor_id: root.user.id });
    });

    it('validation: blank name, unknown field, bad role; GROUP_NOT_FOUND for a missing group', async () => {
      const blank = await caller(t, root).post('/v1/admin/groups', { name: '   ' }).expect(400);
      expect(blank.body.error.code).toBe('VALIDATION_FAILED');
      await caller(t, root)
        .post('/v1/admin/groups', { name: unique('x'), owner: true })
        .expect(400);
      const role = await caller(t, root)
        .post('/v1/admin/groups', { name: unique('x'), role_id: 99 })
        .expect(404);
      expect(role.body.error.code).toBe('ROLE_NOT_FOUND');
      const missing = await caller(t, root).get('/v1/admin/groups/999999999').expect(404);
      expect(missing.body.error).toMatchObject({ code: 'GROUP_NOT_FOUND', details: { group_id: 999999999 } });
    });

    it('PATCH, list with filters and the default name order, DELETE (200 then 204), restore', async () => {
      const id = await group({ description: 'before' });
      const patched = await caller(t, root).patch(`/v1/admin/groups/${id}`, { description: 'after' }).expect(200);
      expect(patched.body.data.description).toBe('after');
      const listed = await caller(t, root)
        .get(`/v1/admin/groups?q=${encodeURIComponent(patched.body.data.name)}`)
        .expect(200);
      expect(listed.body.data.map((g: { id: number }) => g.id)).toEqual([id]);
      const deleted = await caller(t, root).delete(`/v1/admin/groups/${id}`).expect(200);
      expect(deleted.body.data.is_deleted).toBe(true);
      await caller(t, root).delete(`/v1/admin/groups/${id}`).expect(204);
      await caller(t, root).get(`/v1/admin/groups/${id}`).expect(404);
      await caller(t, root).get(`/v1/admin/groups/${id}?include_deleted=true`).expect(200);
      await caller(t, root)
        .post(`/v1/admin/groups/${id}/members`, { members: [{ user_id: root.user.id }] })
        .expect(404);
      await caller(t, root).post(`/v1/admin/groups/${id}/restore`).expect(200);
      await caller(t, root).post(`/v1/admin/groups/${id}/restore`).expect(204);
    });

    it('a viewer reads groups but cannot write them; an operator cannot create one', async () => {
      const viewer = await actor('viewer');
      await caller(t, viewer).get('/v1/admin/groups').expect(200);
      const refused = await caller(t, viewer)
        .post('/v1/admin/groups', { name: unique('v') })
        .expect(403);
      expect(refused.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'groups.create' } });
    });
  });

  describe('members', () => {
    it('add users and a nested group: per-item statuses, member_count, direct and transitive lists, a user’s groups', async () => {
      const outer = await group();
      const inner = await group();
      const [a, b, c] = [await createUser(), await createUser(), await createUser()];
      const added = await add(outer, [
        { user_id: a.id },
        { group_id: inner },
        { user_id: 999999999 },
        { user_id: a.id },
      ]).expect(200);
      expect(added.body.data).toMatchObject({ accepted: 4, processed: 3, failed: 1 });
      expect(added.body.data.results.map((r: { status: string }) => r.status)).toEqual([
        'added',
        'added',
        'failed',
        'added',
      ]);
      expect(added.body.data.results[2].error.code).toBe('USER_NOT_FOUND');
      await add(inner, [{ user_id: b.id }, { user_id: c.id }]).expect(200);
      const again = await add(outer, [{ user_id: a.id }]).expect(200);
      expect(again.body.data.results[0].status).toBe('already_member');

      const detail = await caller(t, root).get(`/v1/admin/groups/${outer}`).expect(200);
      expect(detail.body.data.member_count).toBe(2);
      const direct = await caller(t, root).get(`/v1/admin/groups/${outer}/members`).expect(200);
      expect(
        direct.body.data.map((m: { user_id: number | null; member_group_id: number | null }) => [
          m.user_id,
          m.member_group_id,
        ]),
      ).toEqual([
        [a.id, null],
        [null, inner],
      ]);
      const onlyGroups = await caller(t, root).get(`/v1/admin/groups/${outer}/members?member_type=group`).expect(200);
      expect(onlyGroups.body.meta.total).toBe(1);
      const transitive = await caller(t, root).get(`/v1/admin/groups/${outer}/members?transitive=true`).expect(200);
      expect(transitive.body.data).toEqual([
        { user_id: a.id, via: [outer], expires_at: null },
        { user_id: b.id, via: [inner, outer], expires_at: null },
        { user_id: c.id, via: [inner, outer], expires_at: null },
      ]);
      await caller(t, root).get(`/v1/admin/groups/${outer}/members?transitive=true&member_type=user`).expect(400);
      await caller(t, root).get(`/v1/admin/groups/${outer}/members?transitive=yes`).expect(400);
      const groupsOfB = await caller(t, root).get(`/v1/admin/users/${b.id}/groups`).expect(200);
      expect(groupsOfB.body.data).toEqual([
        {
          group_id: Math.min(inner, outer),
          via: Math.min(inner, outer) === inner ? [inner] : [inner, outer],
          expires_at: null,
        },
        {
          group_id: Math.max(inner, outer),
          via: Math.max(inner, outer) === inner ? [inner] : [inner, outer],
          expires_at: null,
        },
      ]);

      const removed = await caller(t, root)
        .post(`/v1/admin/groups/${outer}/members/remove`, { members: [{ group_id: inner }, { user_id: c.id }] })
        .expect(200);
      expect(removed.body.data.results.map((r: { status: string }) => r.status)).toEqual(['removed', 'not_member']);
      const after = await caller(t, root).get(`/v1/admin/groups/${outer}/members?transitive=true`).expect(200);
      expect(after.body.data.map((m: { user_id: number }) => m.user_id)).toEqual([a.id]);
      const rows = await sql<{ removed_by: string; remove_reason: string | null }>(
        'SELECT removed_by, remove_reason FROM group_memberships WHERE group_id = $1 AND member_group_id = $2',
        [outer, inner],
      );
      expect(rows).toEqual([{ removed_by: root.user.id, remove_reason: null }]);
      const events = await sql<{ action: string }>(
        `SELECT action FROM audit_events WHERE resource_type = 'group' AND resource_id = $1 ORDER BY id`,
        [String(outer)],
      );
      expect(events.map((e) => e.action)).toEqual([
        'group.create',
        'group.member_add',
        'group.member_add',
        'group.member_remove',
      ]);
    });

    it('an item names exactly one of user_id and group_id', async () => {
      const id = await group();
      const both = await add(id, [{ user_id: root.user.id, group_id: id }]).expect(400);
      expect(both.body.error.details.fields.map((f: { rule: string }) => f.rule)).toContain('oneOf');
      await add(id, [{}]).expect(400);
      await add(id, []).expect(400);
    });

    it('nesting: a group cannot contain itself, directly or through others (cycle), nor nest more than 5 levels (depth)', async () => {
      const chain = [await group(), await group(), await group(), await group(), await group(), await group()];
      // chain[0] ⊃ chain[1] ⊃ … ⊃ chain[4]: five levels.
      for (let i = 0; i < 4; i += 1) await add(chain[i] as number, [{ group_id: chain[i + 1] }]).expect(200);
      const self = await add(chain[0] as number, [{ group_id: chain[0] }]).expect(200);
      expect(self.body.data.results[0].error.code).toBe('GROUP_NESTING_INVALID');
      const cycle = await add(chain[4] as number, [{ group_id: chain[0] }]).expect(200);
      expect(cycle.body.data.results[0]).toMatchObject({ status: 'failed', error: { code: 'GROUP_NESTING_INVALID' } });
      const deep = await add(chain[4] as number, [{ group_id: chain[5] }]).expect(200);
      expect(deep.body.data.results[0].error.message).toMatch(/5 levels/);
      const [row] = await sql<{ count: string }>(
        'SELECT count(*) FROM group_memberships WHERE group_id = $1 AND removed_at IS NULL',
        [chain[4]],
      );
      expect(Number(row?.count)).toBe(0);
    });

    it('two concurrent nestings that would close a cycle: one wins, the other fails with GROUP_NESTING_INVALID', async () => {
      const [x, y] = [await group(), await group()];
      const [one, two] = await Promise.all([add(x, [{ group_id: y }]), add(y, [{ group_id: x }])]);
      const statuses = [one.body.data.results[0].status, two.body.data.results[0].status].sort();
      expect(statuses).toEqual(['added', 'failed']);
    });
  });

  describe('what a group holds, its members hold', () => {
    it('a group’s role: effective role on the user, admin access through the group, gone on removal', async () => {
      const member = await createUser({ role: 'member' });
      const token = await tokenFor(member);
      const auth = { auth: `Bearer ${token}` };
      await caller(t, auth).get('/v1/admin/users').expect(403);
      const viewers = await group({ role_id: 4 });
      await add(viewers, [{ user_id: member.id }]).expect(200);
      await caller(t, auth).get('/v1/admin/users').expect(200);
      const user = await caller(t, root).get(`/v1/admin/users/${member.id}`).expect(200);
      expect(user.body.data).toMatchObject({ role_id: 5, effective_role_id: 4 });
      const check = await caller(t, root)
        .get(`/v1/admin/authz/check?user_id=${member.id}&permission=users.read&explain=true`)
        .expect(200);
      expect(check.body.data).toMatchObject({ allowed: true, decided_by: 'role', group_id: viewers });
      expect(check.body.data.paths[0]).toMatchObject({ decided_by: 'role', group_id: viewers, via: [viewers] });
      await caller(t, root)
        .post(`/v1/admin/groups/${viewers}/members/remove`, { members: [{ user_id: member.id }] })
        .expect(200);
      await caller(t, auth).get('/v1/admin/users').expect(403);
      const back = await caller(t, root).get(`/v1/admin/users/${member.id}`).expect(200);
      expect(back.body.data.effective_role_id).toBe(5);
    });

    it('a grant to a nested group reaches its members: group_permission_grant with via; deleting the group ends it', async () => {
      const operator = await actor('operator');
      const parent = await group();
      const child = await group();
      await add(child, [{ user_id: operator.user.id }]).expect(200);
      await add(parent, [{ group_id: child }]).expect(200);
      const body = { email: `${randomUUID().slice(0, 8)}@example.com`, display_name: 'N', role_id: 4 };
      await caller(t, operator).post('/v1/admin/users', body).expect(403);
      const granted = await caller(t, root)
        .post('/v1/admin/permission-grants/grant', { group_id: parent, permission_id: permissionId('users.create') })
        .expect(201);
      expect(granted.body.data).toMatchObject({ user_id: null, group_id: parent, permission_code: 'users.create' });
      await caller(t, operator).post('/v1/admin/users', body).expect(201);
      const check = await caller(t, root)
        .get(`/v1/admin/authz/check?user_id=${operator.user.id}&permission=users.create&explain=true`)
        .expect(200);
      expect(check.body.data).toMatchObject({
        decided_by: 'group_permission_grant',
        grant_id: granted.body.data.id,
        group_id: parent,
      });
      expect(check.body.data.paths).toEqual([
        expect.objectContaining({ decided_by: 'group_permission_grant', group_id: parent, via: [child, parent] }),
      ]);
      const listed = await caller(t, root).get(`/v1/admin/permission-grants?group_id=${parent}`).expect(200);
      expect(listed.body.data.map((g: { id: number }) => g.id)).toEqual([granted.body.data.id]);
      await caller(t, root).delete(`/v1/admin/groups/${child}`).expect(200);
      await caller(t, operator)
        .post('/v1/admin/users', { ...body, email: `${randomUUID().slice(0, 8)}@example.com` })
        .expect(403);
      await caller(t, root).post(`/v1/admin/groups/${child}/restore`).expect(200);
      await caller(t, operator)
        .post('/v1/admin/users', { ...body, email: `${randomUUID().slice(0, 8)}@example.com` })
        .expect(201);
      const revoked = await caller(t, root)
        .post('/v1/admin/permission-grants/revoke', { group_id: parent, permission_id: permissionId('users.create') })
        .expect(200);
      expect(revoked.body.data.is_active).toBe(false);
      await caller(t, operator)
        .post('/v1/admin/users', { ...body, email: `${randomUUID().slice(0, 8)}@example.com` })
        .expect(403);
    });

    it('a membership that expires ends at its instant, with no write (the cached context judges it then)', async () => {
      const member = await createUser({ role: 'member' });
      const auth = { auth: `Bearer ${await tokenFor(member)}` };
      const viewers = await group({ role_id: 4 });
      const instant = Date.now() + 60_000;
      await add(viewers, [{ user_id: member.id }], root, { expires_at: new Date(instant).toISOString() }).expect(200);
      await caller(t, auth).get('/v1/admin/users').expect(200);
      jest.spyOn(Date, 'now').mockImplementation(() => Math.max(realNow(), instant + 1));
      await caller(t, auth).get('/v1/admin/users').expect(403);
    });

    it('an expired membership does not block adding the member again: its row is closed, a new one made', async () => {
      const member = await createUser({ role: 'member' });
      const viewers = await group({ role_id: 4 });
      await add(viewers, [{ user_id: member.id }], root, {
        expires_at: new Date(Date.now() + 60_000).toISOString(),
      }).expect(200);
      // The row as the clock will leave it: expired, never removed.
      await sql('ALTER TABLE group_memberships DISABLE TRIGGER group_memberships_append_only');
      try {
        await sql(
          `UPDATE group_memberships SET added_at = now() - interval '2 minutes', expires_at = now() - interval '1 second' WHERE user_id = $1`,
          [member.id],
        );
      } finally {
        await sql('ALTER TABLE group_memberships ENABLE TRIGGER group_memberships_append_only');
      }
      const again = await add(viewers, [{ user_id: member.id }]).expect(200);
      expect(again.body.data.results[0].status).toBe('added');
      const rows = await sql<{ removed_at: Date | null; remove_reason: string | null }>(
        'SELECT removed_at, remove_reason FROM group_memberships WHERE user_id = $1 ORDER BY id',
        [member.id],
      );
      expect(rows.map((row) => [row.removed_at !== null, row.remove_reason])).toEqual([
        [true, 'expired'],
        [false, null],
      ]);
    });
  });

  describe('a group’s authorities (part 6.3, v1.3)', () => {
    it('an authority for a group: user_id null, 409 for the pair, exactly one holder, filter group_id', async () => {
      const device = await createDevice();
      const team = await group();
      const created = await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: team, label: 'night shift' })
        .expect(201);
      expect(created.body.data).toMatchObject({ device_id: device.id, user_id: null, group_id: team, owner: false });
      const again = await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: team })
        .expect(409);
      expect(again.body.error).toMatchObject({
        code: 'AUTHORITY_ALREADY_EXISTS',
        details: { authority_id: created.body.data.id, group_id: team },
      });
      await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: team, user_id: root.user.id })
        .expect(400);
      await caller(t, root).post('/v1/admin/authorities', { device_id: device.id }).expect(400);
      const missing = await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: 999999999 })
        .expect(404);
      expect(missing.body.error.code).toBe('GROUP_NOT_FOUND');
      const listed = await caller(t, root).get(`/v1/admin/authorities?group_id=${team}`).expect(200);
      expect(listed.body.data.map((a: { id: number }) => a.id)).toEqual([created.body.data.id]);
    });

    it('a member acts on the device through its nested group’s authority permission, and stops at once when removed', async () => {
      const operator = await actor('operator');
      const device = await createDevice();
      const target = await createAuthority(device.id, (await createUser()).id);
      const [outer, middle, inner] = [await group(), await group(), await group()];
      await add(inner, [{ user_id: operator.user.id }]).expect(200);
      await add(middle, [{ group_id: inner }]).expect(200);
      await add(outer, [{ group_id: middle }]).expect(200);
      await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(403);
      const teamAuthority = await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: outer })
        .expect(201);
      const granted = await caller(t, root)
        .post('/v1/admin/authority-permissions', {
          authority_id: teamAuthority.body.data.id,
          permission_id: permissionId('authorities.read'),
        })
        .expect(201);
      expect(granted.body.data.device_id).toBe(device.id);
      await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
      const check = await caller(t, root)
        .get(
          `/v1/admin/authz/check?user_id=${operator.user.id}&permission=authorities.read&device_id=${device.id}&explain=true`,
        )
        .expect(200);
      expect(check.body.data).toMatchObject({
        allowed: true,
        decided_by: 'group_authority_permission',
        authority_id: teamAuthority.body.data.id,
        group_id: outer,
      });
      expect(check.body.data.paths).toEqual([
        expect.objectContaining({
          decided_by: 'group_authority_permission',
          group_id: outer,
          via: [inner, middle, outer],
        }),
      ]);
      // Row filtering: the device's authorities are listed to the member through the group.
      const listed = await caller(t, operator).get(`/v1/admin/authorities?device_id=${device.id}`).expect(200);
      expect(listed.body.data.map((a: { id: number }) => a.id)).toContain(target);
      await caller(t, root)
        .post(`/v1/admin/groups/${middle}/members/remove`, { members: [{ group_id: inner }] })
        .expect(200);
      await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(403);
    });

    it('an access request for a right a group already gives is 422 already_allowed; a role from a group makes a requester', async () => {
      const member = await createUser({ role: 'member' });
      const auth = { auth: `Bearer ${await tokenFor(member)}` };
      // An owner decides the device's requests: nobody allowed by role (anywhere) is told.
      const device = await createDevice({ ownerId: (await createUser({ role: 'operator' })).id });
      await createAuthority(device.id, member.id);
      const operators = await group({ role_id: 3 });
      await add(operators, [{ user_id: member.id }]).expect(200);
      const teamAuthority = await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: operators })
        .expect(201);
      await caller(t, root)
        .post('/v1/admin/authority-permissions', {
          authority_id: teamAuthority.body.data.id,
          permission_id: permissionId('authorities.read'),
        })
        .expect(201);
      const ask = (code: string) =>
        caller(t, auth).post('/v1/admin/access-requests', {
          device_id: device.id,
          permission_id: permissionId(code),
          reason: 'night shift',
          duration_seconds: 3600,
        });
      const already = await ask('authorities.read').expect(422);
      expect(already.body.error).toMatchObject({
        code: 'ACCESS_REQUEST_INVALID',
        details: { reason: 'already_allowed' },
      });
      await ask('authorities.revoke').expect(201);
    });

    it('self: nobody creates an authority for a group it is in, nor grants a permission to that group’s authority', async () => {
      const admin = await actor('admin');
      const device = await createDevice();
      const mine = await group();
      await add(mine, [{ user_id: admin.user.id }]).expect(200);
      const refused = await caller(t, admin)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: mine })
        .expect(422);
      expect(refused.body.error.code).toBe('SELF_ACTION_FORBIDDEN');
      const theirs = await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: mine })
        .expect(201);
      const grant = await caller(t, admin)
        .post('/v1/admin/authority-permissions', {
          authority_id: theirs.body.data.id,
          permission_id: permissionId('authorities.revoke'),
        })
        .expect(422);
      expect(grant.body.error.code).toBe('SELF_ACTION_FORBIDDEN');
      const bulk = await caller(t, admin)
        .post('/v1/admin/authority-permissions/bulk-grant', {
          items: [{ authority_id: theirs.body.data.id, permission_id: permissionId('authorities.revoke') }],
        })
        .expect(200);
      expect(bulk.body.data.results[0].error.code).toBe('SELF_ACTION_FORBIDDEN');
    });

    it('rank: an admin cannot grant a device permission to the authority of a group that reaches a super_admin', async () => {
      const admin = await actor('admin');
      const device = await createDevice();
      const bosses = await group();
      await add(bosses, [{ user_id: (await createUser({ role: 'super_admin' })).id }]).expect(200);
      const authority = await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: bosses })
        .expect(201);
      const refused = await caller(t, admin)
        .post('/v1/admin/authority-permissions', {
          authority_id: authority.body.data.id,
          permission_id: permissionId('authorities.read'),
        })
        .expect(403);
      expect(refused.body.error.code).toBe('ROLE_ESCALATION_FORBIDDEN');
    });
  });

  describe('the rules of part 5 through groups', () => {
    it('self: an actor cannot add itself, a group it would join through, or give a right to a group it is in', async () => {
      const admin = await actor('admin');
      const team = await group();
      const self = await add(team, [{ user_id: admin.user.id }], admin).expect(200);
      expect(self.body.data.results[0].error.code).toBe('SELF_ACTION_FORBIDDEN');
      const mine = await group();
      await add(mine, [{ user_id: admin.user.id }]).expect(200);
      const through = await add(team, [{ group_id: mine }], admin).expect(200);
      expect(through.body.data.results[0].error.code).toBe('SELF_ACTION_FORBIDDEN');
      const grant = await caller(t, admin)
        .post('/v1/admin/permission-grants/grant', { group_id: mine, permission_id: permissionId('users.read') })
        .expect(403);
      // An admin does not hold permission_grants.grant: the route refuses before the rules run.
      expect(grant.body.error.code).toBe('PERMISSION_DENIED');
      const patch = await caller(t, admin).patch(`/v1/admin/groups/${mine}`, { role_id: 3 }).expect(422);
      expect(patch.body.error.code).toBe('SELF_ACTION_FORBIDDEN');
    });

    it('rank: an admin cannot give a group the admin role, nor add a user to a group that confers it', async () => {
      const admin = await actor('admin');
      const refused = await caller(t, admin)
        .post('/v1/admin/groups', { name: unique('a'), role_id: 2 })
        .expect(403);
      expect(refused.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
      const admins = await group({ role_id: 2 });
      const viewer = await createUser({ role: 'viewer' });
      const add1 = await add(admins, [{ user_id: viewer.id }], admin).expect(200);
      expect(add1.body.data.results[0].error.code).toBe('ROLE_ESCALATION_FORBIDDEN');
      // Escalation by nesting: a group of viewers nested into the admins group.
      const viewers = await group();
      await add(viewers, [{ user_id: viewer.id }], admin).expect(200);
      const nest = await add(admins, [{ group_id: viewers }], admin).expect(200);
      expect(nest.body.data.results[0].error.code).toBe('ROLE_ESCALATION_FORBIDDEN');
      const [row] = await sql<{ count: string }>(
        'SELECT count(*) FROM group_memberships WHERE group_id = $1 AND removed_at IS NULL',
        [admins],
      );
      expect(Number(row?.count)).toBe(0);
      // A super_admin in a group protects it: an admin cannot add its group into another.
      const boss = await createUser({ role: 'super_admin' });
      const bosses = await group();
      await add(bosses, [{ user_id: boss.id }]).expect(200);
      const plain = await group();
      const outranked = await add(plain, [{ group_id: bosses }], admin).expect(200);
      expect(outranked.body.data.results[0].error.code).toBe('ROLE_ESCALATION_FORBIDDEN');
    });

    it('delegation: adding a member hands on the group’s grants, which the actor must hold', async () => {
      const admin = await actor('admin');
      const team = await group();
      await caller(t, root)
        .post('/v1/admin/permission-grants/grant', { group_id: team, permission_id: permissionId('cache.rebuild') })
        .expect(201);
      const viewer = await createUser({ role: 'viewer' });
      const refused = await add(team, [{ user_id: viewer.id }], admin).expect(200);
      expect(refused.body.data.results[0].error).toMatchObject({ code: 'DELEGATION_FORBIDDEN' });
    });

    it('a group’s role makes its member outrank-protected: an admin cannot suspend a user made admin by a group', async () => {
      const admin = await actor('admin');
      const target = await createUser({ role: 'viewer' });
      const admins = await group({ role_id: 2 });
      await add(admins, [{ user_id: target.id }]).expect(200);
      const refused = await caller(t, admin).post(`/v1/admin/users/${target.id}/suspend`, {}).expect(403);
      expect(refused.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
    });
  });

  describe('the access questions through groups (part 6.13)', () => {
    it('who may act on a device lists each member reached, with the group and the chain; where a member may act; as of a moment', async () => {
      const device = await createDevice();
      const [member, other] = [await createUser({ role: 'operator' }), await createUser({ role: 'operator' })];
      const [outer, inner] = [await group(), await group()];
      await add(inner, [{ user_id: member.id }]).expect(200);
      const [clock] = await sql<{ now: Date }>('SELECT clock_timestamp() AS now');
      const beforeNesting = (clock?.now ?? new Date()).toISOString();
      await add(outer, [{ group_id: inner }, { user_id: other.id }]).expect(200);
      const team = await caller(t, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: outer })
        .expect(201);
      await caller(t, root)
        .post('/v1/admin/authority-permissions', {
          authority_id: team.body.data.id,
          permission_id: permissionId('authorities.revoke'),
        })
        .expect(201);
      const who = await caller(t, root)
        .get(`/v1/admin/devices/${device.id}/access?permission=authorities.revoke&via=group_authority_permission`)
        .expect(200);
      expect(who.body.data).toEqual([
        {
          user_id: member.id,
          allowed_by: [
            expect.objectContaining({
              decided_by: 'group_authority_permission',
              authority_id: team.body.data.id,
              group_id: outer,
              via: [inner, outer],
            }),
          ],
        },
        {
          user_id: other.id,
          allowed_by: [
            expect.objectContaining({ decided_by: 'group_authority_permission', group_id: outer, via: [outer] }),
          ],
        },
      ]);
      const where = await caller(t, root)
        .get(`/v1/admin/users/${member.id}/access?permission=authorities.revoke`)
        .expect(200);
      expect(where.body.data).toEqual([
        {
          device_id: device.id,
          allowed_by: [expect.objectContaining({ decided_by: 'group_authority_permission', group_id: outer })],
        },
      ]);
      // Before the nesting, the member was not reached (the group history answers).
      const then = await caller(t, root)
        .get(
          `/v1/admin/authz/check?user_id=${member.id}&permission=authorities.revoke&device_id=${device.id}&at=${encodeURIComponent(beforeNesting)}`,
        )
        .expect(200);
      expect(then.body.data.allowed).toBe(false);
      const now = await caller(t, root)
        .get(
          `/v1/admin/authz/check?user_id=${member.id}&permission=authorities.revoke&device_id=${device.id}&at=${encodeURIComponent(new Date().toISOString())}`,
        )
        .expect(200);
      expect(now.body.data).toMatchObject({ allowed: true, decided_by: 'group_authority_permission', group_id: outer });
    });

    it('a group’s grant and a group’s role make their members appear, each decided through the group', async () => {
      const device = await createDevice();
      const member = await createUser({ role: 'member' });
      const granted = await createUser({ role: 'operator' });
      const admins = await group({ role_id: 2 });
      const readers = await group();
      await add(admins, [{ user_id: member.id }]).expect(200);
      await add(readers, [{ user_id: granted.id }]).expect(200);
      await caller(t, root)
        .post('/v1/admin/permission-grants/grant', { group_id: readers, permission_id: permissionId('devices.read') })
        .expect(201);
      const byGrant = await caller(t, root)
        .get(`/v1/admin/devices/${device.id}/access?permission=devices.read&via=group_permission_grant`)
        .expect(200);
      expect(byGrant.body.data.map((row: { user_id: number }) => row.user_id)).toContain(granted.id);
      const byRole = await caller(t, root)
        .get(`/v1/admin/devices/${device.id}/access?permission=devices.read&via=role&page_size=100&count=exact`)
        .expect(200);
      // The member's own role has no admin access: it is listed through the group's role.
      let row: { user_id: number; allowed_by: { group_id: number | null }[] } | undefined;
      for (let page = 1; row === undefined && page <= Math.ceil(byRole.body.meta.total / 100); page += 1) {
        const listed = await caller(t, root)
          .get(`/v1/admin/devices/${device.id}/access?permission=devices.read&via=role&page_size=100&page=${page}`)
          .expect(200);
        row = listed.body.data.find((candidate: { user_id: number }) => candidate.user_id === member.id);
      }
      expect(row?.allowed_by[0]).toMatchObject({ decided_by: 'role', group_id: admins });
    });
  });

  describe('expiry through groups (part 6.17)', () => {
    it('a membership that expires is announced as access.lost at its instant, with group_id, once', async () => {
      const member = await createUser({ role: 'member' });
      const team = await group({ role_id: 4 });
      const [clock] = await sql<{ now: Date }>('SELECT clock_timestamp() AS now');
      const instant = new Date((clock?.now ?? new Date()).getTime() + 1500);
      await add(team, [{ user_id: member.id }], root, { expires_at: instant.toISOString() }).expect(200);
      // The announcer stays a second behind the clock: wait on the database's clock until the
      // instant is that far behind.
      await sql('SELECT pg_sleep(greatest(0, extract(epoch FROM ($1::timestamptz - clock_timestamp()))) + 1.05)', [
        instant,
      ]);
      const announcer = t.app.get(AccessExpiryAnnouncer);
      await announcer.run();
      await announcer.run();
      const lost = await sql<{ occurred_at: Date; data: { permission_code: string; group_id: number; cause: string } }>(
        `SELECT occurred_at, data FROM events WHERE type = 'access.lost' AND resource_id = $1 ORDER BY id`,
        [String(member.id)],
      );
      const gained = await sql<{ data: { permission_code: string } }>(
        `SELECT data FROM events WHERE type = 'access.gained' AND resource_id = $1`,
        [String(member.id)],
      );
      expect(lost.map((event) => event.data.permission_code).sort()).toEqual(
        gained.map((event) => event.data.permission_code).sort(),
      );
      expect(lost.length).toBeGreaterThan(0);
      for (const event of lost) {
        expect(event.data).toMatchObject({ group_id: team, cause: 'expired' });
        expect(event.occurred_at.getTime()).toBe(instant.getTime());
      }
    });
  });

  describe('previews and access events', () => {
    it('dry_run of adding a member answers the access it would give and writes nothing', async () => {
      const viewer = await createUser({ role: 'member' });
      const team = await group({ role_id: 4 });
      const preview = await caller(t, root)
        .post(`/v1/admin/groups/${team}/members?dry_run=true`, { members: [{ user_id: viewer.id }] })
        .expect(200);
      expect(preview.body.data.dry_run).toBe(true);
      expect(preview.body.data.outcome.results[0].status).toBe('added');
      const gained = preview.body.data.access_changes.filter(
        (change: { user_id: number; change: string }) => change.user_id === viewer.id && change.change === 'gained',
      );
      expect(gained.map((change: { permission_code: string }) => change.permission_code)).toContain('users.read');
      const [row] = await sql<{ count: string }>('SELECT count(*) FROM group_memberships WHERE group_id = $1', [team]);
      expect(Number(row?.count)).toBe(0);
      await add(team, [{ user_id: viewer.id }]).expect(200);
      const events = await sql<{ data: { user_id: number; permission_code: string } }>(
        `SELECT data FROM events WHERE type = 'access.gained' AND (data->>'user_id')::bigint = $1`,
        [viewer.id],
      );
      expect(events.map((event) => event.data.permission_code).sort()).toEqual(
        gained.map((change: { permission_code: string }) => change.permission_code).sort(),
      );
    });
  });
});
