import { actor, createUser, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';
import { createAuthority, createDevice } from '../support/devices.js';

describe('devices, authorities and ownership (parts 6.2, 6.3)', () => {
  let t: TestApp;
  let root: { user: TestUser; auth: string };
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const as = (who: { auth: string }) => caller(t, who);
  const auditActions = async (type: string, id: number): Promise<string[]> =>
    (
      await sql<{ action: string }>(
        'SELECT action FROM audit_events WHERE resource_type = $1 AND resource_id = $2 ORDER BY id',
        [type, String(id)],
      )
    ).map((row) => row.action);

  describe('devices', () => {
    it('creates (201, Location, no owner), reads from the cache, patches, and refuses a taken serial', async () => {
      const serial = `SN-${Date.now()}`;
      const created = await as(root)
        .post('/v1/admin/devices', { serial_number: serial, name: 'Gate', model: 'G1' })
        .expect(201);
      const device = created.body.data;
      expect(device).toMatchObject({
        serial_number: serial,
        name: 'Gate',
        model: 'G1',
        owner_user_id: null,
        created_by: root.user.id,
      });
      expect(created.headers.location).toBe(`/v1/admin/devices/${device.id}`);
      await as(root).get(`/v1/admin/devices/${device.id}`).expect(200);
      expect((await as(root).get(`/v1/admin/devices/${device.id}`).expect(200)).body.meta.cache).toBe('hit');
      const patched = await as(root)
        .patch(`/v1/admin/devices/${device.id}`, { name: 'Main gate', model: null })
        .expect(200);
      expect(patched.body.data).toMatchObject({ name: 'Main gate', model: null });
      expect(patched.headers.etag).toBe('"2"');
      const taken = await as(root).post('/v1/admin/devices', { serial_number: serial, name: 'Copy' }).expect(409);
      expect(taken.body.error).toMatchObject({ code: 'DEVICE_SERIAL_TAKEN', details: { serial_number: serial } });
      expect(
        (await as(root).patch(`/v1/admin/devices/${device.id}`, { owner_user_id: 1 }).expect(400)).body.error.details
          .fields[0].field,
      ).toBe('owner_user_id');
      expect((await as(root).get('/v1/admin/devices/987654321').expect(404)).body.error).toMatchObject({
        code: 'DEVICE_NOT_FOUND',
        details: { device_id: 987654321 },
      });
      expect(await auditActions('device', device.id)).toEqual(['device.create', 'device.update']);
    });
  });

  describe('authorities', () => {
    it('creates one (201, owner false, active), and the same pair again is 409 with its id', async () => {
      const device = await createDevice();
      const user = await createUser();
      const created = await as(root)
        .post('/v1/admin/authorities', { device_id: device.id, user_id: user.id, label: 'night shift' })
        .expect(201);
      expect(created.body.data).toMatchObject({
        device_id: device.id,
        user_id: user.id,
        owner: false,
        is_active: true,
        revoked_at: null,
        label: 'night shift',
        is_deleted: false,
      });
      const again = await as(root)
        .post('/v1/admin/authorities', { device_id: device.id, user_id: user.id })
        .expect(409);
      expect(again.body.error).toMatchObject({
        code: 'AUTHORITY_ALREADY_EXISTS',
        details: { authority_id: created.body.data.id, device_id: device.id, user_id: user.id, is_deleted: false },
      });
      expect(await auditActions('authority', created.body.data.id)).toEqual(['authority.create']);
    });

    it('50 concurrent creates of one new pair: exactly one 201, 49 409s, one row', async () => {
      const device = await createDevice();
      const user = await createUser();
      const responses = await Promise.all(
        Array.from({ length: 50 }, () =>
          as(root).post('/v1/admin/authorities', { device_id: device.id, user_id: user.id }),
        ),
      );
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses.filter((status) => status === 201)).toHaveLength(1);
      expect(statuses.filter((status) => status === 409)).toHaveLength(49);
      expect(
        await sql('SELECT count(*)::int AS n FROM authorities WHERE device_id = $1 AND user_id = $2', [
          device.id,
          user.id,
        ]),
      ).toEqual([{ n: 1 }]);
    }, 60_000);

    it('a soft-deleted pair cannot be recreated; restore brings it back', async () => {
      const device = await createDevice();
      const user = await createUser();
      const id = await createAuthority(device.id, user.id);
      const deleted = await as(root).delete(`/v1/admin/authorities/${id}`).expect(200);
      expect(deleted.body.data).toMatchObject({ is_deleted: true, deleted_by: root.user.id });
      await as(root).delete(`/v1/admin/authorities/${id}`).expect(204);
      await as(root).get(`/v1/admin/authorities/${id}`).expect(404);
      expect(
        (await as(root).get(`/v1/admin/authorities/${id}?include_deleted=true`).expect(200)).body.data.is_deleted,
      ).toBe(true);
      const recreate = await as(root)
        .post('/v1/admin/authorities', { device_id: device.id, user_id: user.id })
        .expect(409);
      expect(recreate.body.error.details).toEqual({
        authority_id: id,
        device_id: device.id,
        user_id: user.id,
        is_deleted: true,
      });
      expect((await as(root).post(`/v1/admin/authorities/${id}/activate`).expect(404)).body.error).toMatchObject({
        code: 'AUTHORITY_NOT_FOUND',
        details: { authority_id: id },
      });
      await as(root).post(`/v1/admin/authorities/${id}/restore`).expect(200);
      await as(root).post(`/v1/admin/authorities/${id}/restore`).expect(204);
    });

    it('404 for an unknown device or user in the body; 400 for a past expiry or an owner field', async () => {
      const device = await createDevice();
      const user = await createUser();
      expect(
        (await as(root).post('/v1/admin/authorities', { device_id: 987654321, user_id: user.id }).expect(404)).body
          .error.code,
      ).toBe('DEVICE_NOT_FOUND');
      expect(
        (await as(root).post('/v1/admin/authorities', { device_id: device.id, user_id: 987654321 }).expect(404)).body
          .error.code,
      ).toBe('USER_NOT_FOUND');
      expect(
        (
          await as(root)
            .post('/v1/admin/authorities', {
              device_id: device.id,
              user_id: user.id,
              expires_at: '2020-01-01T00:00:00Z',
            })
            .expect(400)
        ).body.error.details.fields[0],
      ).toMatchObject({ field: 'expires_at', rule: 'future' });
      expect(
        (
          await as(root)
            .post('/v1/admin/authorities', { device_id: device.id, user_id: user.id, owner: true })
            .expect(400)
        ).body.error.details.fields[0].field,
      ).toBe('owner');
    });

    it('PATCH changes only expires_at and label, with If-Match', async () => {
      const device = await createDevice();
      const id = await createAuthority(device.id, (await createUser()).id);
      const until = new Date(Date.now() + 86_400_000).toISOString();
      const patched = await as(root)
        .patch(`/v1/admin/authorities/${id}`, { expires_at: until, label: 'temp' })
        .set('If-Match', '"1"')
        .expect(200);
      expect(patched.body.data).toMatchObject({ expires_at: until, label: 'temp' });
      await as(root).patch(`/v1/admin/authorities/${id}`, { label: 'x' }).set('If-Match', '"1"').expect(412);
      expect(
        (await as(root).patch(`/v1/admin/authorities/${id}`, { is_active: false }).expect(400)).body.error.details
          .fields[0].field,
      ).toBe('is_active');
      expect(
        (await as(root).patch(`/v1/admin/authorities/${id}`, { expires_at: null }).expect(200)).body.data.expires_at,
      ).toBeNull();
    });

    it('deactivate → activate → revoke, with 409s from the wrong states and the reason audited', async () => {
      const device = await createDevice();
      const id = await createAuthority(device.id, (await createUser()).id);
      expect((await as(root).post(`/v1/admin/authorities/${id}/activate`).expect(409)).body.error.details).toEqual({
        from: 'active',
        action: 'activate',
      });
      expect((await as(root).post(`/v1/admin/authorities/${id}/deactivate`).expect(200)).body.data.is_active).toBe(
        false,
      );
      expect((await as(root).post(`/v1/admin/authorities/${id}/deactivate`).expect(409)).body.error.details).toEqual({
        from: 'inactive',
        action: 'deactivate',
      });
      const revoked = await as(root).post(`/v1/admin/authorities/${id}/revoke`, { reason: 'lost badge' }).expect(200);
      expect(revoked.body.data).toMatchObject({ revoked_by: root.user.id, revoke_reason: 'lost badge' });
      expect((await as(root).post(`/v1/admin/authorities/${id}/activate`).expect(409)).body.error.details).toEqual({
        from: 'revoked',
        action: 'activate',
      });
      expect((await as(root).post(`/v1/admin/authorities/${id}/revoke`).expect(409)).body.error.details).toEqual({
        from: 'revoked',
        action: 'revoke',
      });
      const [event] = await sql<{ reason: string }>(
        "SELECT reason FROM audit_events WHERE action = 'authority.revoke' AND resource_id = $1",
        [String(id)],
      );
      expect(event?.reason).toBe('lost badge');
    });

    it("protects the owner's authority: delete, deactivate and revoke are 422", async () => {
      const owner = await createUser();
      const device = await createDevice({ ownerId: owner.id });
      const [{ id } = { id: 0 }] = await sql<{ id: number }>(
        'SELECT id FROM authorities WHERE device_id = $1 AND owner',
        [device.id],
      );
      for (const [method, path] of [
        ['delete', ''],
        ['post', '/deactivate'],
        ['post', '/revoke'],
      ] as const) {
        const response = await (
          method === 'delete'
            ? as(root).delete(`/v1/admin/authorities/${id}`)
            : as(root).post(`/v1/admin/authorities/${id}${path}`)
        ).expect(422);
        expect(response.body.error).toMatchObject({
          code: 'OWNER_AUTHORITY_PROTECTED',
          details: { authority_id: id, device_id: device.id },
        });
      }
      expect(await sql('SELECT owner, is_active, revoked_at, is_deleted FROM authorities WHERE id = $1', [id])).toEqual(
        [{ owner: true, is_active: true, revoked_at: null, is_deleted: false }],
      );
    });

    it('lists with filters, q and sort, hiding deleted rows', async () => {
      const device = await createDevice();
      const [a, b, c] = [await createUser(), await createUser(), await createUser()];
      const first = await createAuthority(device.id, a.id);
      const second = await createAuthority(device.id, b.id, { isActive: false });
      const third = await createAuthority(device.id, c.id);
      await sql("UPDATE authorities SET label = 'Blue team' WHERE id = $1", [third]);
      await as(root).delete(`/v1/admin/authorities/${first}`).expect(200);
      const ids = async (query: string): Promise<number[]> =>
        (
          (await as(root).get(`/v1/admin/authorities?device_id=${device.id}&${query}`).expect(200)).body.data as {
            id: number;
          }[]
        ).map((row) => row.id);
      expect(await ids('')).toEqual([second, third]);
      expect(await ids('include_deleted=true&sort=created_at:desc')).toEqual([third, second, first]);
      expect(await ids('is_active=false')).toEqual([second]);
      expect(await ids('q=blue')).toEqual([third]);
      expect(await ids(`user_id=${b.id}`)).toEqual([second]);
      await as(root).get('/v1/admin/authorities?is_active=maybe').expect(400);
    });
  });

  describe('transfer-owner', () => {
    it('assigns the first owner, then transfers with and without keeping access, recording history', async () => {
      const device = await createDevice();
      const [alice, bob, carol] = [await createUser(), await createUser(), await createUser()];
      const first = await as(root)
        .post(`/v1/admin/devices/${device.id}/transfer-owner`, { new_owner_user_id: alice.id, reason: 'initial' })
        .expect(200);
      expect(first.body.data).toMatchObject({
        device_id: device.id,
        previous_owner: null,
        new_owner: { user_id: alice.id, owner: true, is_active: true },
      });
      const bobAuthority = await createAuthority(device.id, bob.id);
      await as(root).post(`/v1/admin/authorities/${bobAuthority}/revoke`).expect(200);
      const second = await as(root)
        .post(`/v1/admin/devices/${device.id}/transfer-owner`, { new_owner_user_id: bob.id })
        .expect(200);
      expect(second.body.data.previous_owner).toMatchObject({ user_id: alice.id, owner: false, revoked_at: null });
      expect(second.body.data.new_owner).toMatchObject({
        id: bobAuthority,
        user_id: bob.id,
        owner: true,
        revoked_at: null,
        is_active: true,
      });
      const third = await as(root)
        .post(`/v1/admin/devices/${device.id}/transfer-owner`, {
          new_owner_user_id: carol.id,
          keep_previous_owner_access: false,
          reason: 'sold',
        })
        .expect(200);
      expect(third.body.data.previous_owner).toMatchObject({ user_id: bob.id, owner: false, revoke_reason: 'sold' });
      expect((await as(root).get(`/v1/admin/devices/${device.id}`).expect(200)).body.data.owner_user_id).toBe(carol.id);
      const history = await as(root).get(`/v1/admin/devices/${device.id}/ownership-transfers`).expect(200);
      expect(
        history.body.data.map((row: { from_user_id: number | null; to_user_id: number; reason: string | null }) => [
          row.from_user_id,
          row.to_user_id,
          row.reason,
        ]),
      ).toEqual([
        [null, alice.id, 'initial'],
        [alice.id, bob.id, null],
        [bob.id, carol.id, 'sold'],
      ]);
      expect(history.body.data[0]).toMatchObject({
        transferred_by: root.user.id,
        transferred_at: expect.any(String),
        request_id: expect.any(String),
      });
    });

    it('the history of a missing device is 404 DEVICE_NOT_FOUND for every role, even those allowed everywhere', async () => {
      const missing = 987654320;
      for (const role of ['super_admin', 'admin', 'operator', 'viewer'] as const) {
        const response = await as(await actor(role))
          .get(`/v1/admin/devices/${missing}/ownership-transfers`)
          .expect(404);
        expect(response.body.error).toMatchObject({ code: 'DEVICE_NOT_FOUND', details: { device_id: missing } });
      }
      // A device with no transfer yet still answers its (empty) history.
      const device = await createDevice();
      expect((await as(root).get(`/v1/admin/devices/${device.id}/ownership-transfers`).expect(200)).body.data).toEqual(
        [],
      );
    });

    it('422 TRANSFER_TARGET_INVALID for the current owner, a suspended or a deleted user; 404 for an unknown one', async () => {
      const owner = await createUser();
      const device = await createDevice({ ownerId: owner.id });
      const suspended = await createUser({ status: 'suspended' });
      const deleted = await createUser();
      await sql('UPDATE users SET is_deleted = true WHERE id = $1', [deleted.id]);
      for (const [userId, reason] of [
        [owner.id, 'already_owner'],
        [suspended.id, 'user_not_active'],
        [deleted.id, 'user_deleted'],
      ] as const) {
        const response = await as(root)
          .post(`/v1/admin/devices/${device.id}/transfer-owner`, { new_owner_user_id: userId })
          .expect(422);
        expect(response.body.error).toMatchObject({
          code: 'TRANSFER_TARGET_INVALID',
          details: { new_owner_user_id: userId, reason },
        });
      }
      expect(
        (
          await as(root)
            .post(`/v1/admin/devices/${device.id}/transfer-owner`, { new_owner_user_id: 987654321 })
            .expect(404)
        ).body.error.code,
      ).toBe('USER_NOT_FOUND');
      expect(
        (await as(root).post('/v1/admin/devices/987654321/transfer-owner', { new_owner_user_id: owner.id }).expect(404))
          .body.error.code,
      ).toBe('DEVICE_NOT_FOUND');
      expect(await sql('SELECT count(*)::int AS n FROM ownership_transfers WHERE device_id = $1', [device.id])).toEqual(
        [{ n: 0 }],
      );
    });

    it('10 concurrent transfers to different users end with exactly one owner and a history row per success', async () => {
      const device = await createDevice({ ownerId: (await createUser()).id });
      const targets = await Promise.all(Array.from({ length: 10 }, () => createUser()));
      const responses = await Promise.all(
        targets.map((user) =>
          as(root).post(`/v1/admin/devices/${device.id}/transfer-owner`, { new_owner_user_id: user.id }),
        ),
      );
      const succeeded = responses.filter((response) => response.status === 200);
      expect(succeeded).toHaveLength(10);
      const owners = await sql<{ user_id: number }>('SELECT user_id FROM authorities WHERE device_id = $1 AND owner', [
        device.id,
      ]);
      expect(owners).toHaveLength(1);
      expect(await sql('SELECT count(*)::int AS n FROM ownership_transfers WHERE device_id = $1', [device.id])).toEqual(
        [{ n: 10 }],
      );
      const [last] = await sql<{ to_user_id: number }>(
        'SELECT to_user_id FROM ownership_transfers WHERE device_id = $1 ORDER BY id DESC LIMIT 1',
        [device.id],
      );
      expect(owners[0]?.user_id).toBe(last?.to_user_id);
      expect(await sql('SELECT owner_user_id FROM devices WHERE id = $1', [device.id])).toEqual([
        { owner_user_id: last?.to_user_id },
      ]);
    }, 60_000);
  });
});
