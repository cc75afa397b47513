import pg from 'pg';
import { loadSettings } from '../../src/platform/config/settings.js';
import { migrate } from '../../src/platform/database/migrate.js';
import { actor, createUser, permissionId } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { createOwnDatabase } from '../support/own-database.js';
import { caller } from '../support/requests.js';

describe('contract fixes of part 6.3, 6.6 and part 1 (issue 12)', () => {
  const app = useApp({ widgets: false });

  it('the attack: a revoked authority says is_active false and is not listed by is_active=true', async () => {
    const device = (await createDevice()).id;
    const authority = await createAuthority(device, (await createUser()).id);
    const revoked = await caller(app.t, app.root)
      .post(`/v1/admin/authorities/${authority}/revoke`, { reason: 'left' })
      .expect(200);
    expect(revoked.body.data).toMatchObject({ is_active: false, revoke_reason: 'left', revoked_by: app.root.user.id });
    expect(
      (await caller(app.t, app.root).get(`/v1/admin/authorities/${authority}`).expect(200)).body.data.is_active,
    ).toBe(false);
    const ids = async (filter: string): Promise<number[]> =>
      (
        await caller(app.t, app.root).get(`/v1/admin/authorities?device_id=${device}&${filter}`).expect(200)
      ).body.data.map((row: { id: number }) => row.id);
    expect(await ids('is_active=true')).toEqual([]);
    expect(await ids('is_active=false')).toEqual([authority]);
    const [event] = await sql<{ changes: Record<string, unknown> }>(
      "SELECT changes FROM audit_events WHERE action = 'authority.revoke' AND resource_id = $1",
      [String(authority)],
    );
    expect(event?.changes).toMatchObject({ is_active: [true, false] });
    // The database itself refuses a revoked authority that is active.
    await expect(sql('UPDATE authorities SET is_active = true WHERE id = $1', [authority])).rejects.toThrow(
      /authorities_revoked_inactive/,
    );
    // A previous owner revoked by a transfer is inactive too.
    const first = await createUser({ role: 'operator' });
    const owned = (await createDevice({ ownerId: first.id })).id;
    const moved = await caller(app.t, app.root)
      .post(`/v1/admin/devices/${owned}/transfer-owner`, {
        new_owner_user_id: (await createUser({ role: 'operator' })).id,
        keep_previous_owner_access: false,
      })
      .expect(200);
    expect(moved.body.data.previous_owner).toMatchObject({ user_id: first.id, owner: false, is_active: false });
  });

  it('authorities carry assigned_by and assigned_at: the creator, or the actor of the transfer that made or revived it', async () => {
    const operator = await actor('operator');
    const device = (await createDevice({ ownerId: operator.user.id })).id;
    const holder = await createUser({ role: 'operator' });
    const created = await caller(app.t, operator)
      .post('/v1/admin/authorities', { device_id: device, user_id: holder.id })
      .expect(201);
    expect(created.body.data).toMatchObject({
      assigned_by: operator.user.id,
      assigned_at: created.body.data.created_at,
    });
    await caller(app.t, app.root).post(`/v1/admin/authorities/${created.body.data.id}/revoke`).expect(200);
    // The transfer revives the revoked authority: assigned anew by the transfer's actor.
    const revived = await caller(app.t, app.root)
      .post(`/v1/admin/devices/${device}/transfer-owner`, { new_owner_user_id: holder.id })
      .expect(200);
    expect(revived.body.data.new_owner).toMatchObject({
      id: created.body.data.id,
      is_active: true,
      revoked_at: null,
      assigned_by: app.root.user.id,
    });
    expect(Date.parse(revived.body.data.new_owner.assigned_at)).toBeGreaterThan(
      Date.parse(created.body.data.assigned_at),
    );
    // A live authority made owner keeps who assigned it.
    const live = await caller(app.t, app.root)
      .post('/v1/admin/authorities', { device_id: device, user_id: (await createUser({ role: 'operator' })).id })
      .expect(201);
    const admin = await actor('admin');
    const promoted = await caller(app.t, admin)
      .post(`/v1/admin/devices/${device}/transfer-owner`, { new_owner_user_id: live.body.data.user_id })
      .expect(200);
    expect(promoted.body.data.new_owner).toMatchObject({
      id: live.body.data.id,
      assigned_by: app.root.user.id,
      assigned_at: live.body.data.assigned_at,
    });
    // A brand-new owner authority is assigned by the transfer's actor.
    const fresh = await createUser({ role: 'operator' });
    const made = await caller(app.t, admin)
      .post(`/v1/admin/devices/${device}/transfer-owner`, { new_owner_user_id: fresh.id })
      .expect(200);
    expect(made.body.data.new_owner).toMatchObject({ user_id: fresh.id, assigned_by: admin.user.id });
  });

  it('authority_permissions is append-only at the database: only one revocation stamp, no other UPDATE, no DELETE', async () => {
    const authority = await createAuthority((await createDevice()).id, (await createUser()).id, {
      permissions: ['devices.read'],
    });
    const [row] = await sql<{ id: number }>('SELECT id FROM authority_permissions WHERE authority_id = $1', [
      authority,
    ]);
    await expect(
      sql('UPDATE authority_permissions SET permission_id = $2 WHERE id = $1', [
        row?.id,
        permissionId('devices.transfer_owner'),
      ]),
    ).rejects.toThrow(/append-only/);
    await expect(sql('DELETE FROM authority_permissions WHERE id = $1', [row?.id])).rejects.toThrow(/append-only/);
    await sql('UPDATE authority_permissions SET revoked_at = now(), revoked_by = $2 WHERE id = $1', [
      row?.id,
      app.root.user.id,
    ]);
    await expect(sql('UPDATE authority_permissions SET revoked_at = NULL WHERE id = $1', [row?.id])).rejects.toThrow(
      /append-only/,
    );
    expect(await sql('SELECT permission_id FROM authority_permissions WHERE id = $1', [row?.id])).toEqual([
      { permission_id: permissionId('devices.read') },
    ]);
  });

  it('DELETE /authority-permissions/{id} honours If-Match: 412 changes nothing, live is 1, revoked 2', async () => {
    const authority = await createAuthority((await createDevice()).id, (await createUser()).id, {
      permissions: ['devices.read'],
    });
    const [row] = await sql<{ id: number }>('SELECT id FROM authority_permissions WHERE authority_id = $1', [
      authority,
    ]);
    const detail = await caller(app.t, app.root).get(`/v1/admin/authority-permissions/${row?.id}`).expect(200);
    expect(detail.headers.etag).toBe('"1"');
    const stale = await caller(app.t, app.root)
      .delete(`/v1/admin/authority-permissions/${row?.id}`)
      .set('If-Match', '"2"')
      .expect(412);
    expect(stale.body.error).toMatchObject({ code: 'PRECONDITION_FAILED', details: { current_etag: '"1"' } });
    expect(await sql('SELECT revoked_at FROM authority_permissions WHERE id = $1', [row?.id])).toEqual([
      { revoked_at: null },
    ]);
    const done = await caller(app.t, app.root)
      .delete(`/v1/admin/authority-permissions/${row?.id}`)
      .set('If-Match', detail.headers.etag ?? '')
      .expect(200);
    expect(done.headers.etag).toBe('"2"');
    // Already revoked: the no-op still answers to If-Match.
    const late = await caller(app.t, app.root)
      .delete(`/v1/admin/authority-permissions/${row?.id}`)
      .set('If-Match', '"1"')
      .expect(412);
    expect(late.body.error).toMatchObject({ code: 'PRECONDITION_FAILED', details: { current_etag: '"2"' } });
    await caller(app.t, app.root)
      .delete(`/v1/admin/authority-permissions/${row?.id}`)
      .set('If-Match', '"2"')
      .expect(204);
  });

  it("a label-only PATCH leaves the device's authority set alone; an expiry change bumps it", async () => {
    const device = (await createDevice()).id;
    const authority = await createAuthority(device, (await createUser()).id);
    const version = async (): Promise<number> =>
      Number(
        (
          await sql<{ version: string }>(
            "SELECT coalesce((SELECT version FROM projection_versions WHERE scope = 'device' AND id = $1), 1)::text AS version",
            [device],
          )
        )[0]?.version,
      );
    const before = await version();
    await caller(app.t, app.root).patch(`/v1/admin/authorities/${authority}`, { label: 'front desk' }).expect(200);
    expect(await version()).toBe(before);
    await caller(app.t, app.root)
      .patch(`/v1/admin/authorities/${authority}`, { expires_at: new Date(Date.now() + 86_400_000).toISOString() })
      .expect(200);
    expect(await version()).toBe(before + 1);
  });

  it('concurrent transfers and writes on the same authorities never deadlock (projection bumps come last, in one order)', async () => {
    const device = (await createDevice({ ownerId: (await createUser({ role: 'operator' })).id })).id;
    const users = await Promise.all(Array.from({ length: 4 }, () => createUser({ role: 'operator' })));
    const authorities = await Promise.all(users.map((user) => createAuthority(device, user.id)));
    const requests = users.flatMap((user, index) => [
      caller(app.t, app.root).post(`/v1/admin/devices/${device}/transfer-owner`, { new_owner_user_id: user.id }),
      caller(app.t, app.root).patch(`/v1/admin/authorities/${authorities[index]}`, {
        expires_at: null,
        label: `l${index}`,
      }),
      caller(app.t, app.root).post(`/v1/admin/authorities/${authorities[(index + 1) % authorities.length]}/deactivate`),
    ]);
    const statuses = (await Promise.all(requests)).map((response) => response.status);
    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    expect(await sql('SELECT count(*)::int AS n FROM authorities WHERE device_id = $1 AND owner', [device])).toEqual([
      { n: 1 },
    ]);
  });

  it.each(['01', '0x1', '1.0', '1e0', '%201', '1%20', '+1', '-1', '0', '9007199254740993'])(
    'path id %s is 400 VALIDATION_FAILED on every kind of route',
    async (id) => {
      const routes = [
        caller(app.t, app.root).get(`/v1/admin/users/${id}`),
        caller(app.t, app.root).patch(`/v1/admin/users/${id}`, { display_name: 'X' }),
        caller(app.t, app.root).post(`/v1/admin/users/${id}/suspend`),
        caller(app.t, app.root).get(`/v1/admin/authorities/${id}`),
        caller(app.t, app.root).get(`/v1/admin/devices/${id}/ownership-transfers`),
        caller(app.t, app.root).delete(`/v1/admin/authority-permissions/${id}`),
        caller(app.t, app.root).get(`/v1/admin/users/${id}/sessions`),
      ];
      for (const route of routes) {
        const response = await route.expect(400);
        expect(response.body.error).toMatchObject({
          code: 'VALIDATION_FAILED',
          details: { fields: [{ field: expect.stringMatching(/id$/), rule: 'int' }] },
        });
      }
      await caller(app.t, app.root).get(`/v1/admin/users/${app.root.user.id}`).expect(200);
    },
  );
});

describe('the trust migration fixes rows written before it', () => {
  it('revoked authorities become inactive; owners lose any expiry; assigned_by/assigned_at come from the creator; users.revoke_sessions is seeded as 41', async () => {
    const own = await createOwnDatabase('trust_migration', { migrateUpTo: 'ListIndexes1764115200000' });
    const client = new pg.Client({ connectionString: own.url });
    await client.connect();
    try {
      const user = (
        await client.query<{ id: string }>(
          "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('m@example.com', 'M', 4, 2) RETURNING id",
        )
      ).rows[0]?.id;
      const device = (
        await client.query<{ id: string }>(
          "INSERT INTO devices (serial_number, name) VALUES ('SN-MIGRATE', 'D') RETURNING id",
        )
      ).rows[0]?.id;
      await client.query(
        "INSERT INTO authorities (device_id, user_id, is_active, revoked_at, created_by, created_at) VALUES ($1, $2, true, now(), $2, '2026-01-02T03:04:05.678Z')",
        [device, user],
      );
      const owner = (
        await client.query<{ id: string }>(
          "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('o@example.com', 'O', 3, 2) RETURNING id",
        )
      ).rows[0]?.id;
      await client.query(
        "INSERT INTO authorities (device_id, user_id, owner, expires_at) VALUES ($1, $2, true, now() + interval '3 seconds')",
        [device, owner],
      );
      await migrate(loadSettings({ DATABASE_URL: own.url }), own.url);
      const { rows } = await client.query(
        'SELECT owner, is_active, expires_at, assigned_by::int, assigned_at = created_at AS same_time, version FROM authorities ORDER BY id',
      );
      expect(rows).toEqual([
        { owner: false, is_active: false, expires_at: null, assigned_by: Number(user), same_time: true, version: 1 },
        // The attack, already in the data: the owner's expiry is cleared, and the database refuses it from now on.
        { owner: true, is_active: true, expires_at: null, assigned_by: null, same_time: true, version: 1 },
      ]);
      await expect(
        client.query("UPDATE authorities SET expires_at = now() + interval '1 day' WHERE owner"),
      ).rejects.toThrow(/authorities_owner_never_expires/);
      expect((await client.query("SELECT id FROM permissions WHERE code = 'users.revoke_sessions'")).rows).toEqual([
        { id: 41 },
      ]);
    } finally {
      await client.end();
      await own.drop();
    }
  });
});
