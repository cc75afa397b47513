import { actor, createUser, permissionId } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';

const auditCount = (userId: number) =>
  sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE resource_type = 'user' AND resource_id = $1", [
    String(userId),
  ]);

describe('role rank on writes to users (part 5)', () => {
  const app = useApp({ widgets: false });

  it('the attack: an admin cannot rename or reset the PIN of another admin; a viewer with users.update cannot change an admin', async () => {
    const admin = await actor('admin');
    const other = await createUser({ role: 'admin', displayName: 'Other admin' });
    const renamed = await caller(app.t, admin)
      .patch(`/v1/admin/users/${other.id}`, { display_name: 'Taken over' })
      .expect(403);
    expect(renamed.body.error).toEqual({
      code: 'ROLE_ESCALATION_FORBIDDEN',
      message: expect.any(String),
      details: { target_role_id: 2 },
    });
    const pin = await caller(app.t, admin).post(`/v1/admin/users/${other.id}/reset-pin`).expect(403);
    expect(pin.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
    expect(await sql('SELECT display_name, pin_hash FROM users WHERE id = $1', [other.id])).toEqual([
      { display_name: 'Other admin', pin_hash: null },
    ]);

    const viewer = await actor('viewer');
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: viewer.user.id,
        permission_id: permissionId('users.update'),
      })
      .expect(201);
    const email = await caller(app.t, viewer)
      .patch(`/v1/admin/users/${other.id}`, { email: `stolen-${other.id}@example.com` })
      .expect(403);
    expect(email.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
    expect(await sql('SELECT email FROM users WHERE id = $1', [other.id])).toEqual([{ email: other.email }]);
    expect(await auditCount(other.id)).toEqual([{ n: 0 }]);
    // The same grant works on a user the viewer outranks.
    const member = await createUser({ role: 'member' });
    await caller(app.t, viewer).patch(`/v1/admin/users/${member.id}`, { display_name: 'Renamed member' }).expect(200);
  });

  it.each([
    ['delete', (id: number) => ['delete', `/v1/admin/users/${id}`] as const],
    ['suspend', (id: number) => ['post', `/v1/admin/users/${id}/suspend`] as const],
    ['activate', (id: number) => ['post', `/v1/admin/users/${id}/activate`] as const],
    ['revoke-sessions', (id: number) => ['post', `/v1/admin/users/${id}/revoke-sessions`] as const],
  ])(
    '%s on a user of equal rank is 403 for an admin, allowed for a super_admin on a super_admin',
    async (_name, route) => {
      const admin = await actor('admin');
      const peer = await createUser({ role: 'admin', status: 'pending' });
      const [method, path] = route(peer.id);
      const refused =
        method === 'delete'
          ? await caller(app.t, admin).delete(path).expect(403)
          : await caller(app.t, admin).post(path).expect(403);
      expect(refused.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
      expect(await auditCount(peer.id)).toEqual([{ n: 0 }]);

      const otherRoot = await createUser({ role: 'super_admin', status: 'pending' });
      const [rootMethod, rootPath] = route(otherRoot.id);
      const allowed =
        rootMethod === 'delete'
          ? await caller(app.t, app.root).delete(rootPath)
          : await caller(app.t, app.root).post(rootPath);
      expect(allowed.status).toBe(200);
    },
  );

  it('role changes need outranking the old and the new role; self edits of contact fields are allowed, a self role change is 422', async () => {
    const admin = await actor('admin');
    const operator = await createUser({ role: 'operator' });
    await caller(app.t, admin).patch(`/v1/admin/users/${operator.id}`, { role_id: 4 }).expect(200);
    const up = await caller(app.t, admin).patch(`/v1/admin/users/${operator.id}`, { role_id: 2 }).expect(403);
    expect(up.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
    const created = await caller(app.t, admin)
      .post('/v1/admin/users', { email: `rank-${operator.id}@example.com`, display_name: 'X', role_id: 2 })
      .expect(403);
    expect(created.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });

    // An operator given users.update (a grant) can move a member to viewer, never to operator (its own rank).
    const rankedOperator = await actor('operator');
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: rankedOperator.user.id,
        permission_id: permissionId('users.update'),
      })
      .expect(201);
    const member = await createUser({ role: 'member' });
    await caller(app.t, rankedOperator).patch(`/v1/admin/users/${member.id}`, { role_id: 4 }).expect(200);
    expect(
      (await caller(app.t, rankedOperator).patch(`/v1/admin/users/${member.id}`, { role_id: 3 }).expect(403)).body.error
        .details,
    ).toEqual({ target_role_id: 3 });

    await caller(app.t, admin)
      .patch(`/v1/admin/users/${admin.user.id}`, { display_name: 'Me, renamed', phone: '+351912345678' })
      .expect(200);
    const selfRole = await caller(app.t, admin).patch(`/v1/admin/users/${admin.user.id}`, { role_id: 1 }).expect(422);
    expect(selfRole.body.error).toMatchObject({
      code: 'SELF_ACTION_FORBIDDEN',
      details: { action: 'change_role', user_id: admin.user.id },
    });
    const rootSelf = await caller(app.t, app.root)
      .patch(`/v1/admin/users/${app.root.user.id}`, { role_id: 4 })
      .expect(422);
    expect(rootSelf.body.error.code).toBe('SELF_ACTION_FORBIDDEN');
    // Sending one's own current role changes nothing and is not a role change.
    await caller(app.t, admin).patch(`/v1/admin/users/${admin.user.id}`, { role_id: 2 }).expect(200);
    expect(await sql('SELECT role_id FROM users WHERE id = $1', [admin.user.id])).toEqual([{ role_id: 2 }]);
  });
});

describe("owner protection: no expiry on the owner's authority (part 6.3)", () => {
  const app = useApp({ widgets: false });

  it("the attack: a delegate with authorities.update cannot set expires_at on the owner's authority", async () => {
    const owner = await createUser({ role: 'operator' });
    const device = (await createDevice({ ownerId: owner.id })).id;
    const [ownerAuthority] = await sql<{ id: number }>('SELECT id FROM authorities WHERE device_id = $1 AND owner', [
      device,
    ]);
    const delegate = await actor('operator');
    await createAuthority(device, delegate.user.id, { permissions: ['authorities.update'] });
    const soon = new Date(Date.now() + 3000).toISOString();
    const response = await caller(app.t, delegate)
      .patch(`/v1/admin/authorities/${ownerAuthority?.id}`, { expires_at: soon })
      .expect(422);
    expect(response.body.error).toEqual({
      code: 'OWNER_AUTHORITY_PROTECTED',
      message: expect.any(String),
      details: { authority_id: ownerAuthority?.id, device_id: device, action: 'expire' },
    });
    expect(
      (
        await caller(app.t, app.root)
          .patch(`/v1/admin/authorities/${ownerAuthority?.id}`, { expires_at: soon })
          .expect(422)
      ).body.error.code,
    ).toBe('OWNER_AUTHORITY_PROTECTED');
    expect(await sql('SELECT expires_at, version FROM authorities WHERE id = $1', [ownerAuthority?.id])).toEqual([
      { expires_at: null, version: 1 },
    ]);
    // A label, or clearing the expiry, is fine.
    await caller(app.t, delegate)
      .patch(`/v1/admin/authorities/${ownerAuthority?.id}`, { label: 'Owner', expires_at: null })
      .expect(200);
    const check = await caller(app.t, app.root)
      .get(`/v1/admin/authz/check?user_id=${owner.id}&permission=devices.update&device_id=${device}`)
      .expect(200);
    expect(check.body.data).toMatchObject({ allowed: true, decided_by: 'device_owner' });
  });
});
