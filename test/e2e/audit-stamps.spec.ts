import { useApp } from '../support/app.js';
import { createUser, permissionId } from '../support/auth.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';

/** The `changes` of the newest audit event of this action on this resource. */
async function changesOf(action: string, resourceId: number): Promise<Record<string, [unknown, unknown]>> {
  const [row] = await sql<{ changes: Record<string, [unknown, unknown]> }>(
    'SELECT changes FROM audit_events WHERE action = $1 AND resource_id = $2 ORDER BY id DESC LIMIT 1',
    [action, String(resourceId)],
  );
  if (row === undefined) throw new Error(`no ${action} event for ${resourceId}`);
  return row.changes;
}

/**
 * Part 6.x: `changes` maps each changed field to `[before, after]`, the stamps a write sets
 * included (a review found `updated_by`, `revoked_by` and `revoke_reason` left out).
 */
describe('audit changes name the stamps the write changed', () => {
  const app = useApp({ widgets: false });
  const as = () => caller(app.t, app.root);

  it('an update names updated_by; a delete names deleted_by and deleted_at', async () => {
    const user = await createUser({ role: 'operator' });
    await as().patch(`/v1/admin/users/${user.id}`, { display_name: 'Stamped' }).expect(200);
    expect(await changesOf('user.update', user.id)).toMatchObject({
      display_name: [expect.any(String), 'Stamped'],
      updated_by: [null, app.root.user.id],
    });
    await as().delete(`/v1/admin/users/${user.id}`).expect(200);
    expect(await changesOf('user.delete', user.id)).toEqual({
      is_deleted: [false, true],
      deleted_at: [null, expect.any(String)],
      deleted_by: [null, app.root.user.id],
    });
  });

  it('a revoke names revoked_at, revoked_by and revoke_reason: grants, authorities, authority permissions', async () => {
    const user = await createUser({ role: 'operator' });
    const permission = permissionId('users.read');
    await as().post('/v1/admin/permission-grants/grant', { user_id: user.id, permission_id: permission }).expect(201);
    const revoked = await as()
      .post('/v1/admin/permission-grants/revoke', { user_id: user.id, permission_id: permission, reason: 'left team' })
      .expect(200);
    expect(await changesOf('permission_grant.revoke', revoked.body.data.id as number)).toEqual({
      revoked_at: [null, expect.any(String)],
      revoked_by: [null, app.root.user.id],
      revoke_reason: [null, 'left team'],
    });

    const device = await createDevice();
    const authority = await createAuthority(device.id, user.id, { permissions: ['authorities.read'] });
    const [held] = await sql<{ id: string }>('SELECT id FROM authority_permissions WHERE authority_id = $1', [
      authority,
    ]);
    await as().delete(`/v1/admin/authority-permissions/${held?.id}`).expect(200);
    expect(await changesOf('authority_permission.revoke', Number(held?.id))).toEqual({
      revoked_at: [null, expect.any(String)],
      revoked_by: [null, app.root.user.id],
    });
    await as().post(`/v1/admin/authorities/${authority}/revoke`, { reason: 'device returned' }).expect(200);
    expect(await changesOf('authority.revoke', authority)).toEqual({
      is_active: [true, false],
      revoked_at: [null, expect.any(String)],
      revoked_by: [null, app.root.user.id],
      revoke_reason: [null, 'device returned'],
      updated_by: [null, app.root.user.id],
    });
  });

  it('a member removed names removed_at, removed_by and remove_reason', async () => {
    const user = await createUser({ role: 'operator' });
    const group = (
      await as()
        .post('/v1/admin/groups', { name: `stamps ${user.id}` })
        .expect(201)
    ).body.data.id as number;
    await as()
      .post(`/v1/admin/groups/${group}/members`, { members: [{ user_id: user.id }] })
      .expect(200);
    await as()
      .post(`/v1/admin/groups/${group}/members/remove`, { members: [{ user_id: user.id }], reason: 'moved' })
      .expect(200);
    expect(await changesOf('group.member_remove', group)).toEqual({
      member: [user.id, null],
      removed_at: [null, expect.any(String)],
      removed_by: [null, app.root.user.id],
      remove_reason: [null, 'moved'],
    });
  });
});
