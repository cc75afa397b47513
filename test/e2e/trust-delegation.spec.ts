import { actor, createUser, permissionId } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';

const activeRows = (authorityId: number) =>
  sql<{ code: string }>(
    'SELECT p.code FROM authority_permissions ap JOIN permissions p ON p.id = ap.permission_id WHERE ap.authority_id = $1 AND ap.revoked_at IS NULL ORDER BY p.code',
    [authorityId],
  );

describe('self and delegation rules (part 5)', () => {
  const app = useApp({ widgets: false });

  it('the attack: an operator holding authority_permissions.grant on B cannot grant itself devices.transfer_owner, nor make itself owner, nor hand on what it lacks', async () => {
    const operator = await actor('operator');
    const owner = await createUser({ role: 'operator' });
    const device = (await createDevice({ ownerId: owner.id })).id;
    const own = await createAuthority(device, operator.user.id, {
      permissions: ['authority_permissions.grant', 'devices.read'],
    });

    const selfGrant = await caller(app.t, operator)
      .post('/v1/admin/authority-permissions', {
        authority_id: own,
        permission_id: permissionId('devices.transfer_owner'),
      })
      .expect(422);
    expect(selfGrant.body.error).toMatchObject({
      code: 'SELF_ACTION_FORBIDDEN',
      details: { authority_id: own, user_id: operator.user.id },
    });
    expect(await activeRows(own)).toEqual([{ code: 'authority_permissions.grant' }, { code: 'devices.read' }]);

    // Even when someone else gave its authority the right, a device-scoped right never makes its holder owner.
    await caller(app.t, app.root)
      .post('/v1/admin/authority-permissions', {
        authority_id: own,
        permission_id: permissionId('devices.transfer_owner'),
      })
      .expect(201);
    const selfTransfer = await caller(app.t, operator)
      .post(`/v1/admin/devices/${device}/transfer-owner`, { new_owner_user_id: operator.user.id })
      .expect(422);
    expect(selfTransfer.body.error).toMatchObject({
      code: 'SELF_ACTION_FORBIDDEN',
      details: { action: 'transfer_owner', device_id: device },
    });
    expect(await sql('SELECT owner_user_id FROM devices WHERE id = $1', [device])).toEqual([
      { owner_user_id: owner.id },
    ]);
    expect(await sql('SELECT count(*)::int AS n FROM ownership_transfers WHERE device_id = $1', [device])).toEqual([
      { n: 0 },
    ]);

    // Handing on a right it does not hold on that device: 403 DELEGATION_FORBIDDEN, nothing written.
    const bystander = await createAuthority(device, (await createUser()).id);
    const handOn = await caller(app.t, operator)
      .post('/v1/admin/authority-permissions', {
        authority_id: bystander,
        permission_id: permissionId('authorities.revoke'),
      })
      .expect(403);
    expect(handOn.body.error).toEqual({
      code: 'DELEGATION_FORBIDDEN',
      message: expect.any(String),
      details: { permission: 'authorities.revoke', device_id: device },
    });
    expect(await activeRows(bystander)).toEqual([]);
    // What it holds, it may hand on.
    await caller(app.t, operator)
      .post('/v1/admin/authority-permissions', { authority_id: bystander, permission_id: permissionId('devices.read') })
      .expect(201);
    await caller(app.t, operator)
      .post('/v1/admin/authority-permissions', {
        authority_id: bystander,
        permission_id: permissionId('devices.transfer_owner'),
      })
      .expect(201);
    expect(await activeRows(bystander)).toEqual([{ code: 'devices.read' }, { code: 'devices.transfer_owner' }]);
    const audit = await sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_events WHERE actor_id = $1 AND action = 'authority_permission.grant'",
      [operator.user.id],
    );
    expect(audit).toEqual([{ n: 2 }]);
  });

  it('a role or grant that allows devices.transfer_owner everywhere may transfer to itself', async () => {
    const device = (await createDevice({ ownerId: (await createUser({ role: 'operator' })).id })).id;
    const taken = await caller(app.t, app.root)
      .post(`/v1/admin/devices/${device}/transfer-owner`, { new_owner_user_id: app.root.user.id })
      .expect(200);
    expect(taken.body.data.new_owner).toMatchObject({
      user_id: app.root.user.id,
      owner: true,
      assigned_by: app.root.user.id,
    });

    const granted = await actor('operator');
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: granted.user.id,
        permission_id: permissionId('devices.transfer_owner'),
      })
      .expect(201);
    await caller(app.t, granted)
      .post(`/v1/admin/devices/${device}/transfer-owner`, { new_owner_user_id: granted.user.id })
      .expect(200);
  });

  it('nobody creates an authority for themselves, not even a super_admin', async () => {
    const device = (await createDevice()).id;
    const response = await caller(app.t, app.root)
      .post('/v1/admin/authorities', { device_id: device, user_id: app.root.user.id })
      .expect(422);
    expect(response.body.error).toMatchObject({
      code: 'SELF_ACTION_FORBIDDEN',
      details: { action: 'create_authority', user_id: app.root.user.id },
    });
    expect(await sql('SELECT count(*)::int AS n FROM authorities WHERE device_id = $1', [device])).toEqual([{ n: 0 }]);
    // The owner of a device (authorities.create through layer 3c) cannot add itself either: it already is there.
    const owner = await actor('operator');
    const owned = (await createDevice({ ownerId: owner.user.id })).id;
    await caller(app.t, owner)
      .post('/v1/admin/authorities', { device_id: owned, user_id: (await createUser()).id })
      .expect(201);
  });

  it('permission grants: handing on needs holding it (role or grant), granting to oneself is 422', async () => {
    const admin = await actor('admin');
    // An admin lacks permission_grants.grant by role; a super_admin gives it one.
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: admin.user.id,
        permission_id: permissionId('permission_grants.grant'),
      })
      .expect(201);
    const viewer = await createUser({ role: 'viewer' });
    await caller(app.t, admin)
      .post('/v1/admin/permission-grants/grant', { user_id: viewer.id, permission_id: permissionId('users.update') })
      .expect(201);
    // It holds permission_grants.grant through its grant, so it may hand that on too.
    await caller(app.t, admin)
      .post('/v1/admin/permission-grants/grant', {
        user_id: viewer.id,
        permission_id: permissionId('permission_grants.grant'),
      })
      .expect(201);
    const lacking = await caller(app.t, admin)
      .post('/v1/admin/permission-grants/grant', {
        user_id: viewer.id,
        permission_id: permissionId('permission_grants.revoke'),
      })
      .expect(403);
    expect(lacking.body.error).toEqual({
      code: 'DELEGATION_FORBIDDEN',
      message: expect.any(String),
      details: { permission: 'permission_grants.revoke' },
    });
    const self = await caller(app.t, admin)
      .post('/v1/admin/permission-grants/grant', { user_id: admin.user.id, permission_id: permissionId('users.read') })
      .expect(422);
    expect(self.body.error).toMatchObject({
      code: 'SELF_ACTION_FORBIDDEN',
      details: { action: 'grant', user_id: admin.user.id },
    });
    expect(
      await sql<{ code: string }>(
        'SELECT p.code FROM permission_grants g JOIN permissions p ON p.id = g.permission_id WHERE g.user_id = $1 ORDER BY p.code',
        [viewer.id],
      ),
    ).toEqual([{ code: 'permission_grants.grant' }, { code: 'users.update' }]);

    // A device-scoped permission as a user-level grant needs it everywhere, not on one device.
    const operator = await actor('operator');
    await createDevice({ ownerId: operator.user.id });
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: operator.user.id,
        permission_id: permissionId('permission_grants.grant'),
      })
      .expect(201);
    const scoped = await caller(app.t, operator)
      .post('/v1/admin/permission-grants/grant', {
        user_id: (await createUser({ role: 'member' })).id,
        permission_id: permissionId('devices.update'),
      })
      .expect(403);
    expect(scoped.body.error).toMatchObject({
      code: 'DELEGATION_FORBIDDEN',
      details: { permission: 'devices.update' },
    });
  });

  it('bulk-grant applies the same rules per item, set-based; dry run answers the same and writes nothing', async () => {
    const operator = await actor('operator');
    const mine = (await createDevice()).id;
    const other = (await createDevice()).id;
    const own = await createAuthority(mine, operator.user.id, {
      permissions: ['authority_permissions.grant', 'devices.read'],
    });
    const bystander = await createAuthority(mine, (await createUser()).id);
    const elsewhere = await createAuthority(other, (await createUser()).id);
    const items = [
      { authority_id: bystander, permission_id: permissionId('devices.read') },
      { authority_id: bystander, permission_id: permissionId('devices.update') },
      { authority_id: own, permission_id: permissionId('devices.update') },
      { authority_id: elsewhere, permission_id: permissionId('devices.read') },
      { authority_id: bystander, permission_id: permissionId('authority_permissions.grant') },
    ];
    const statuses = (body: { data: { results: { status: string; error: { code: string } | null }[] } }) =>
      body.data.results.map((result) => `${result.status}:${result.error?.code ?? '-'}`);
    const wanted = [
      'granted:-',
      'failed:DELEGATION_FORBIDDEN',
      'failed:SELF_ACTION_FORBIDDEN',
      'failed:PERMISSION_DENIED',
      'granted:-',
    ];
    const dry = await caller(app.t, operator)
      .post('/v1/admin/authority-permissions/bulk-grant', { items, dry_run: true })
      .expect(200);
    expect(statuses(dry.body)).toEqual(wanted);
    expect(await activeRows(bystander)).toEqual([]);
    const real = await caller(app.t, operator)
      .post('/v1/admin/authority-permissions/bulk-grant', { items })
      .expect(200);
    expect(statuses(real.body)).toEqual(wanted);
    expect(real.body.data).toMatchObject({ accepted: 5, processed: 2, failed: 3 });
    expect(await activeRows(bystander)).toEqual([{ code: 'authority_permissions.grant' }, { code: 'devices.read' }]);
    expect(await activeRows(own)).toEqual([{ code: 'authority_permissions.grant' }, { code: 'devices.read' }]);
    expect(await activeRows(elsewhere)).toEqual([]);
    // Revoking is not limited by delegation: the owner of the right to revoke may revoke anything on the device.
    const owner = await actor('operator');
    const ownedDevice = (await createDevice({ ownerId: owner.user.id })).id;
    const held = await createAuthority(ownedDevice, (await createUser()).id, { permissions: ['devices.update'] });
    const revoke = await caller(app.t, owner)
      .post('/v1/admin/authority-permissions/bulk-revoke', {
        items: [{ authority_id: held, permission_id: permissionId('devices.update') }],
      })
      .expect(200);
    expect(statuses(revoke.body)).toEqual(['revoked:-']);
  });

  it('a viewer cannot grant or revoke for users its role does not outrank', async () => {
    const viewer = await actor('viewer');
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: viewer.user.id,
        permission_id: permissionId('permission_grants.grant'),
      })
      .expect(201);
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: viewer.user.id,
        permission_id: permissionId('permission_grants.revoke'),
      })
      .expect(201);
    const admin = await createUser({ role: 'admin' });
    const up = await caller(app.t, viewer)
      .post('/v1/admin/permission-grants/grant', { user_id: admin.id, permission_id: permissionId('users.read') })
      .expect(403);
    expect(up.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: admin.id,
        permission_id: permissionId('permission_grants.grant'),
      })
      .expect(201);
    const down = await caller(app.t, viewer)
      .post('/v1/admin/permission-grants/revoke', {
        user_id: admin.id,
        permission_id: permissionId('permission_grants.grant'),
      })
      .expect(403);
    expect(down.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
    const member = await createUser({ role: 'member' });
    await caller(app.t, viewer)
      .post('/v1/admin/permission-grants/grant', { user_id: member.id, permission_id: permissionId('users.read') })
      .expect(201);
  });

  it('a right held only through an authority never extends that same authority; narrowing it, or a global right, is fine', async () => {
    const operator = await actor('operator');
    const device = (await createDevice()).id;
    const soon = new Date(Date.now() + 3_600_000);
    const own = await createAuthority(device, operator.user.id, {
      permissions: ['authorities.update', 'devices.read'],
      expiresAt: soon,
    });
    for (const expires_at of [null, new Date(Date.now() + 7_200_000).toISOString()]) {
      const extended = await caller(app.t, operator).patch(`/v1/admin/authorities/${own}`, { expires_at }).expect(422);
      expect(extended.body.error).toMatchObject({
        code: 'SELF_ACTION_FORBIDDEN',
        details: { action: 'extend_authority', authority_id: own, device_id: device, user_id: operator.user.id },
      });
    }
    expect(await sql<{ expires_at: Date }>('SELECT expires_at FROM authorities WHERE id = $1', [own])).toEqual([
      { expires_at: soon },
    ]);
    const shorter = new Date(Date.now() + 1_800_000).toISOString();
    await caller(app.t, operator)
      .patch(`/v1/admin/authorities/${own}`, { expires_at: shorter, label: 'mine' })
      .expect(200);
    // Another user's authority on the same device: the right applies as usual.
    const other = await createAuthority(device, (await createUser()).id, { expiresAt: soon });
    await caller(app.t, operator).patch(`/v1/admin/authorities/${other}`, { expires_at: null }).expect(200);
    // A global grant of authorities.update (layer b) may extend its own.
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: operator.user.id,
        permission_id: permissionId('authorities.update'),
      })
      .expect(201);
    await caller(app.t, operator).patch(`/v1/admin/authorities/${own}`, { expires_at: null }).expect(200);
  });
});
