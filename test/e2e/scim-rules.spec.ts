import { randomUUID } from 'node:crypto';
import { actor, createUser, permissionId, type Caller, type TestUser } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createGroup } from '../support/groups.js';
import { body, scim, scimError } from '../support/scim.js';

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const addMembers = (...ids: (number | string)[]) => ({
  schemas: [PATCH],
  Operations: [{ op: 'add', path: 'members', value: ids.map((value) => ({ value: String(value) })) }],
});

/*
 * Every SCIM write is judged by part 5's rules for the token's user, as the same change through
 * /v1/admin: an admin's identity provider cannot make a super_admin, or an admin, by putting a user
 * into a role-carrying group, nor act on itself; a refused PATCH writes nothing.
 */
describe('SCIM writes follow rank, self and delegation (part 6.19 with part 5)', () => {
  const app = useApp({ widgets: false });
  let admin: Caller;
  let person: TestUser;
  let superGroup: number;
  let adminGroup: number;
  let plainGroup: number;

  async function liveMembers(groupId: number): Promise<number> {
    const [row] = await sql<{ count: number }>(
      'SELECT count(*)::int AS count FROM group_memberships WHERE group_id = $1 AND removed_at IS NULL',
      [groupId],
    );
    return row?.count ?? -1;
  }

  beforeAll(async () => {
    admin = await actor('admin');
    await sql('INSERT INTO permission_grants (user_id, permission_id, granted_by) VALUES ($1, $2, NULL)', [
      admin.user.id,
      permissionId('scim.provision'),
    ]);
    person = await createUser({ role: 'member' });
    superGroup = await createGroup(app.t, app.root, { role_id: 1 });
    adminGroup = await createGroup(app.t, app.root, { role_id: 2 });
    plainGroup = await createGroup(app.t, app.root, {});
  });

  it('an admin’s token cannot put a user into a group conferring super_admin or admin: 403, nothing written', async () => {
    for (const group of [superGroup, adminGroup]) {
      const refused = await scim(app.t, admin).patch(`/Groups/${group}`, addMembers(person.id)).expect(403);
      expect(body(refused)).toEqual(scimError(403));
      expect(await liveMembers(group)).toBe(0);
    }
    const replaced = await scim(app.t, admin)
      .put(`/Groups/${superGroup}`, { displayName: `renamed ${randomUUID()}`, members: [{ value: String(person.id) }] })
      .expect(403);
    expect(body(replaced)).toEqual(scimError(403));
    expect(await liveMembers(superGroup)).toBe(0);
  });

  it('nor nest a group into one: the users the nested group reaches are judged', async () => {
    const nested = await createGroup(app.t, app.root, {});
    await scim(app.t, admin).patch(`/Groups/${nested}`, addMembers(person.id)).expect(200);
    await scim(app.t, admin)
      .patch(`/Groups/${superGroup}`, {
        schemas: [PATCH],
        Operations: [{ op: 'add', path: 'members', value: [{ value: String(nested), type: 'Group' }] }],
      })
      .expect(403);
    expect(await liveMembers(superGroup)).toBe(0);
  });

  it('atomic: a rename with a refused member in the same PATCH writes neither', async () => {
    const [before] = await sql<{ name: string }>('SELECT name FROM groups WHERE id = $1', [adminGroup]);
    await scim(app.t, admin)
      .patch(`/Groups/${adminGroup}`, {
        schemas: [PATCH],
        Operations: [
          { op: 'replace', path: 'displayName', value: `taken over ${randomUUID()}` },
          { op: 'add', path: 'members', value: [{ value: String(person.id) }] },
        ],
      })
      .expect(403);
    const [after] = await sql<{ name: string }>('SELECT name FROM groups WHERE id = $1', [adminGroup]);
    expect(after?.name).toBe(before?.name);
  });

  it('a group created with a member that does not exist is not created: 400 invalidValue', async () => {
    const displayName = `ghosts ${randomUUID()}`;
    const refused = await scim(app.t, admin)
      .post('/Groups', { displayName, members: [{ value: String(person.id) }, { value: '999999999999' }] })
      .expect(400);
    expect(body(refused)).toEqual(scimError(400, 'invalidValue'));
    expect(await sql('SELECT id FROM groups WHERE name = $1', [displayName])).toEqual([]);
  });

  it('self: the token’s user cannot join a group, deactivate or delete itself', async () => {
    await scim(app.t, admin).patch(`/Groups/${plainGroup}`, addMembers(admin.user.id)).expect(403);
    expect(await liveMembers(plainGroup)).toBe(0);
    await scim(app.t, admin)
      .patch(`/Users/${admin.user.id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      })
      .expect(403);
    await scim(app.t, admin).delete(`/Users/${admin.user.id}`).expect(403);
    const [row] = await sql<{ status_id: number; is_deleted: boolean }>(
      'SELECT status_id, is_deleted FROM users WHERE id = $1',
      [admin.user.id],
    );
    expect(row).toEqual({ status_id: 2, is_deleted: false });
  });

  it('rank: an admin’s token cannot deactivate, change or delete a super_admin', async () => {
    const top = await createUser({ role: 'super_admin' });
    await scim(app.t, admin)
      .patch(`/Users/${top.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: 'False' }] })
      .expect(403);
    await scim(app.t, admin)
      .patch(`/Users/${top.id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'replace', path: 'userName', value: 'x@y.co' }],
      })
      .expect(403);
    await scim(app.t, admin).delete(`/Users/${top.id}`).expect(403);
    const [row] = await sql<{ status_id: number; is_deleted: boolean; user_name: string | null }>(
      'SELECT status_id, is_deleted, user_name FROM users WHERE id = $1',
      [top.id],
    );
    expect(row).toEqual({ status_id: 2, is_deleted: false, user_name: null });
  });

  it('the permission: a token without scim.provision is 403 on every resource route; discovery needs no token', async () => {
    const viewer = await actor('viewer');
    const admin2 = await actor('admin');
    for (const who of [viewer, admin2]) {
      await scim(app.t, who).get('/Users').expect(403);
      await scim(app.t, who).get('/Groups').expect(403);
      await scim(app.t, who)
        .post('/Users', { userName: `x-${randomUUID()}@y.co` })
        .expect(403);
    }
    for (const path of ['/ServiceProviderConfig', '/ResourceTypes', '/Schemas']) {
      const open = await app.t.http().get(`/scim/v2${path}`).expect(200);
      expect(open.headers['content-type']).toMatch(/^application\/scim\+json/);
    }
    const config = JSON.parse((await app.t.http().get('/scim/v2/ServiceProviderConfig')).text) as Record<
      string,
      unknown
    >;
    expect(config).toMatchObject({
      patch: { supported: true },
      bulk: { supported: false },
      filter: { supported: true, maxResults: 100 },
      sort: { supported: false },
      etag: { supported: true },
      changePassword: { supported: false },
      authenticationSchemes: [{ type: 'oauthbearertoken' }],
    });
  });
});
