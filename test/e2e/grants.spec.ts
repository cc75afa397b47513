import { setTimeout as sleep } from 'node:timers/promises';
import { PERMISSIONS } from '../../src/platform/auth/permissions.js';
import { actor, createUser, permissionId, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';

describe('permission grants, authority permissions, bulk and /authz/check (parts 5, 6.5, 6.6)', () => {
  let t: TestApp;
  let root: { user: TestUser; auth: string };
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  describe('permission grants', () => {
    it('grant → takes effect on the next request → revoke → gone; re-granting adds a row', async () => {
      const operator = await actor('operator');
      const body = { email: `g-${Date.now()}@example.com`, display_name: 'G', role_id: 4 };
      await caller(t, operator).post('/v1/admin/users', body).expect(403);
      const granted = await caller(t, root)
        .post('/v1/admin/permission-grants/grant', {
          user_id: operator.user.id,
          permission_id: permissionId('users.create'),
          reason: 'onboarding week',
        })
        .expect(201);
      expect(granted.body.data).toMatchObject({
        user_id: operator.user.id,
        permission_code: 'users.create',
        reason: 'onboarding week',
        granted_by: root.user.id,
        revoked_at: null,
        is_active: true,
      });
      expect(granted.headers.location).toBe(`/v1/admin/permission-grants/${granted.body.data.id}`);
      await caller(t, operator).post('/v1/admin/users', body).expect(201);
      const again = await caller(t, root)
        .post('/v1/admin/permission-grants/grant', {
          user_id: operator.user.id,
          permission_id: permissionId('users.create'),
        })
        .expect(409);
      expect(again.body.error).toMatchObject({
        code: 'PERMISSION_ALREADY_GRANTED',
        details: { grant_id: granted.body.data.id },
      });
      const revoked = await caller(t, root)
        .post('/v1/admin/permission-grants/revoke', {
          user_id: operator.user.id,
          permission_id: permissionId('users.create'),
          reason: 'done',
        })
        .expect(200);
      expect(revoked.body.data).toMatchObject({
        id: granted.body.data.id,
        revoked_by: root.user.id,
        revoke_reason: 'done',
        is_active: false,
      });
      expect(revoked.headers.etag).toBe('"2"');
      await caller(t, operator)
        .post('/v1/admin/users', { ...body, email: `g2-${Date.now()}@example.com` })
        .expect(403);
      expect(
        (
          await caller(t, root)
            .post('/v1/admin/permission-grants/revoke', {
              user_id: operator.user.id,
              permission_id: permissionId('users.create'),
            })
            .expect(404)
        ).body.error.code,
      ).toBe('PERMISSION_GRANT_NOT_FOUND');
      await caller(t, root)
        .post('/v1/admin/permission-grants/grant', {
          user_id: operator.user.id,
          permission_id: permissionId('users.create'),
        })
        .expect(201);
      const rows = await caller(t, root)
        .get(`/v1/admin/permission-grants?user_id=${operator.user.id}&sort=id:asc`)
        .expect(200);
      expect(rows.body.data.map((row: { is_active: boolean }) => row.is_active)).toEqual([false, true]);
      expect(
        (
          await caller(t, root)
            .get(`/v1/admin/permission-grants?user_id=${operator.user.id}&is_active=true`)
            .expect(200)
        ).body.meta.total,
      ).toBe(1);
      const actions = await sql<{ action: string }>(
        "SELECT action FROM audit_events WHERE resource_type = 'permission_grant' AND resource_id = $1 ORDER BY id",
        [String(granted.body.data.id)],
      );
      expect(actions.map((row) => row.action)).toEqual(['permission_grant.grant', 'permission_grant.revoke']);
    });

    it('an expired grant stops counting at once, with no job', async () => {
      const operator = await actor('operator');
      await caller(t, root)
        .post('/v1/admin/permission-grants/grant', {
          user_id: operator.user.id,
          permission_id: permissionId('audit.read'),
          expires_at: new Date(Date.now() + 1500).toISOString(),
        })
        .expect(201);
      const check = `/v1/admin/authz/check?user_id=${operator.user.id}&permission=audit.read`;
      expect((await caller(t, root).get(check).expect(200)).body.data).toMatchObject({
        allowed: true,
        decided_by: 'permission_grant',
      });
      await sleep(1700);
      expect((await caller(t, root).get(check).expect(200)).body.data).toMatchObject({
        allowed: false,
        decided_by: null,
        grant_id: null,
      });
    });

    it('refuses self-grants (422), unknown users or permissions (404), past expiries (400), and an admin granting (403)', async () => {
      const user = await createUser();
      expect(
        (
          await caller(t, root)
            .post('/v1/admin/permission-grants/grant', { user_id: root.user.id, permission_id: 1 })
            .expect(422)
        ).body.error.code,
      ).toBe('SELF_ACTION_FORBIDDEN');
      expect(
        (
          await caller(t, root)
            .post('/v1/admin/permission-grants/grant', { user_id: 987654321, permission_id: 1 })
            .expect(404)
        ).body.error.code,
      ).toBe('USER_NOT_FOUND');
      expect(
        (
          await caller(t, root)
            .post('/v1/admin/permission-grants/grant', { user_id: user.id, permission_id: 999 })
            .expect(404)
        ).body.error,
      ).toMatchObject({ code: 'PERMISSION_NOT_FOUND', details: { permission_id: 999 } });
      await caller(t, root)
        .post('/v1/admin/permission-grants/grant', {
          user_id: user.id,
          permission_id: 1,
          expires_at: '2001-01-01T00:00:00Z',
        })
        .expect(400);
      const admin = await actor('admin');
      expect(
        (
          await caller(t, admin)
            .post('/v1/admin/permission-grants/grant', { user_id: user.id, permission_id: 1 })
            .expect(403)
        ).body.error.details,
      ).toEqual({ permission: 'permission_grants.grant' });
      expect(await sql('SELECT count(*)::int AS n FROM permission_grants WHERE user_id = $1', [user.id])).toEqual([
        { n: 0 },
      ]);
    });

    it('the database keeps grants append-only: only the revocation stamp may change, once', async () => {
      const user = await createUser();
      const granted = await caller(t, root)
        .post('/v1/admin/permission-grants/grant', { user_id: user.id, permission_id: 1 })
        .expect(201);
      await expect(
        sql("UPDATE permission_grants SET reason = 'edited' WHERE id = $1", [granted.body.data.id]),
      ).rejects.toThrow(/append-only/);
      await expect(sql('DELETE FROM permission_grants WHERE id = $1', [granted.body.data.id])).rejects.toThrow(
        /append-only/,
      );
      await caller(t, root)
        .post('/v1/admin/permission-grants/revoke', { user_id: user.id, permission_id: 1 })
        .expect(200);
      await expect(
        sql('UPDATE permission_grants SET revoked_at = now() WHERE id = $1', [granted.body.data.id]),
      ).rejects.toThrow(/append-only/);
    });
  });

  describe('authority permissions', () => {
    it('attaches (201), refuses a second active one (409) and non-device-scoped permissions (422), revokes (200 then 204)', async () => {
      const device = await createDevice();
      const authority = await createAuthority(device.id, (await createUser()).id);
      const created = await caller(t, root)
        .post('/v1/admin/authority-permissions', {
          authority_id: authority,
          permission_id: permissionId('authorities.revoke'),
        })
        .expect(201);
      expect(created.body.data).toMatchObject({
        authority_id: authority,
        device_id: device.id,
        permission_code: 'authorities.revoke',
        is_active: true,
        granted_by: root.user.id,
      });
      const again = await caller(t, root)
        .post('/v1/admin/authority-permissions', {
          authority_id: authority,
          permission_id: permissionId('authorities.revoke'),
        })
        .expect(409);
      expect(again.body.error).toMatchObject({
        code: 'AUTHORITY_PERMISSION_EXISTS',
        details: { authority_permission_id: created.body.data.id },
      });
      expect(
        (
          await caller(t, root)
            .post('/v1/admin/authority-permissions', {
              authority_id: authority,
              permission_id: permissionId('users.read'),
            })
            .expect(422)
        ).body.error.code,
      ).toBe('PERMISSION_NOT_DEVICE_SCOPED');
      expect(
        (
          await caller(t, root)
            .post('/v1/admin/authority-permissions', {
              authority_id: 987654321,
              permission_id: permissionId('authorities.read'),
            })
            .expect(404)
        ).body.error.code,
      ).toBe('AUTHORITY_NOT_FOUND');
      expect(
        (await caller(t, root).get(`/v1/admin/authority-permissions?device_id=${device.id}`).expect(200)).body.data.map(
          (row: { id: number }) => row.id,
        ),
      ).toEqual([created.body.data.id]);
      const revoked = await caller(t, root)
        .delete(`/v1/admin/authority-permissions/${created.body.data.id}`)
        .expect(200);
      expect(revoked.body.data).toMatchObject({ is_active: false, revoked_by: root.user.id });
      await caller(t, root).delete(`/v1/admin/authority-permissions/${created.body.data.id}`).expect(204);
      expect((await caller(t, root).get('/v1/admin/authority-permissions/987654321').expect(404)).body.error.code).toBe(
        'AUTHORITY_PERMISSION_NOT_FOUND',
      );
      // Re-attaching after a revocation makes a new row.
      await caller(t, root)
        .post('/v1/admin/authority-permissions', {
          authority_id: authority,
          permission_id: permissionId('authorities.revoke'),
        })
        .expect(201);
    });
  });

  describe('bulk-grant and bulk-revoke', () => {
    it('answers per item in order, with partial success, and fails a forbidden item alone', async () => {
      const operator = await actor('operator');
      const mine = await createDevice({ ownerId: operator.user.id });
      const theirs = await createDevice();
      const onMine = await createAuthority(mine.id, (await createUser()).id, { permissions: ['authorities.read'] });
      const onTheirs = await createAuthority(theirs.id, (await createUser()).id);
      const items = [
        { authority_id: onMine, permission_id: permissionId('authorities.revoke') },
        { authority_id: onMine, permission_id: permissionId('authorities.read') },
        { authority_id: onMine, permission_id: permissionId('authorities.revoke') },
        { authority_id: 987654321, permission_id: permissionId('authorities.read') },
        { authority_id: onMine, permission_id: permissionId('users.read') },
        { authority_id: onMine, permission_id: 999 },
        { authority_id: onTheirs, permission_id: permissionId('authorities.read') },
      ];
      const dry = await caller(t, operator)
        .post('/v1/admin/authority-permissions/bulk-grant', { items, dry_run: true })
        .expect(200);
      const response = await caller(t, operator)
        .post('/v1/admin/authority-permissions/bulk-grant', { items, reason: 'rota' })
        .expect(200);
      const statuses = response.body.data.results.map(
        (result: { index: number; status: string; error: { code: string } | null }) => [
          result.index,
          result.status,
          result.error?.code ?? null,
        ],
      );
      expect(statuses).toEqual([
        [0, 'granted', null],
        [1, 'already_granted', null],
        [2, 'already_granted', null],
        [3, 'failed', 'AUTHORITY_NOT_FOUND'],
        [4, 'failed', 'PERMISSION_NOT_DEVICE_SCOPED'],
        [5, 'failed', 'PERMISSION_NOT_FOUND'],
        [6, 'failed', 'PERMISSION_DENIED'],
      ]);
      expect(response.body.data).toMatchObject({ accepted: 7, processed: 3, failed: 4 });
      expect(response.body.data.results[2].authority_permission_id).toBe(
        response.body.data.results[0].authority_permission_id,
      );
      // The preview ran the same statements and rolled them back: the write's answer, item by item,
      // but naming no row it only would have made (the pair granted, and its repeat in the batch).
      expect(dry.body.data.results.map((result: { status: string }) => result.status)).toEqual(
        statuses.map(([, status]: [number, string]) => status),
      );
      expect(
        dry.body.data.results.map(
          (result: { authority_permission_id: number | null }) => result.authority_permission_id,
        ),
      ).toEqual([null, response.body.data.results[1].authority_permission_id, null, null, null, null, null]);
      const live = await sql<{ code: string }>(
        'SELECT p.code FROM authority_permissions ap JOIN permissions p ON p.id = ap.permission_id WHERE ap.authority_id = $1 AND ap.revoked_at IS NULL ORDER BY p.code',
        [onMine],
      );
      expect(live.map((row) => row.code)).toEqual(['authorities.read', 'authorities.revoke']);
      expect(
        await sql("SELECT reason FROM audit_events WHERE action = 'authority_permission.grant' AND resource_id = $1", [
          String(response.body.data.results[0].authority_permission_id),
        ]),
      ).toEqual([{ reason: 'rota' }]);
      expect(
        await sql('SELECT count(*)::int AS n FROM authority_permissions WHERE authority_id = $1', [onTheirs]),
      ).toEqual([{ n: 0 }]);

      const revoke = await caller(t, operator)
        .post('/v1/admin/authority-permissions/bulk-revoke', {
          items: [
            items[0],
            items[0],
            { authority_id: onTheirs, permission_id: permissionId('authorities.read') },
            { authority_id: onMine, permission_id: permissionId('devices.update') },
          ],
        })
        .expect(200);
      expect(revoke.body.data.results.map((result: { status: string }) => result.status)).toEqual([
        'revoked',
        'not_granted',
        'failed',
        'not_granted',
      ]);
    });

    it('a bulk grant and a bulk revoke take effect on the very next request', async () => {
      const holder = await actor('operator');
      const device = await createDevice();
      const authority = await createAuthority(device.id, holder.user.id);
      // The device's authority set is cached now, without the permission.
      await caller(t, holder).get(`/v1/admin/devices/${device.id}`).expect(403);
      await caller(t, root)
        .post('/v1/admin/authority-permissions/bulk-grant', {
          items: [{ authority_id: authority, permission_id: permissionId('devices.read') }],
        })
        .expect(200);
      await caller(t, holder).get(`/v1/admin/devices/${device.id}`).expect(200);
      await caller(t, root)
        .post('/v1/admin/authority-permissions/bulk-revoke', {
          items: [{ authority_id: authority, permission_id: permissionId('devices.read') }],
        })
        .expect(200);
      await caller(t, holder).get(`/v1/admin/devices/${device.id}`).expect(403);
    });

    it('dry_run writes nothing; 0 or 1001 items are a 400', async () => {
      const device = await createDevice();
      const authority = await createAuthority(device.id, (await createUser()).id);
      await caller(t, root)
        .post('/v1/admin/authority-permissions/bulk-grant', {
          items: [{ authority_id: authority, permission_id: permissionId('devices.read') }],
          dry_run: true,
        })
        .expect(200);
      expect(
        await sql('SELECT count(*)::int AS n FROM authority_permissions WHERE authority_id = $1', [authority]),
      ).toEqual([{ n: 0 }]);
      expect(
        (await caller(t, root).post('/v1/admin/authority-permissions/bulk-grant', { items: [] }).expect(400)).body.error
          .details.fields[0].field,
      ).toBe('items');
      const many = Array.from({ length: 1001 }, () => ({
        authority_id: authority,
        permission_id: permissionId('devices.read'),
      }));
      await caller(t, root).post('/v1/admin/authority-permissions/bulk-grant', { items: many }).expect(400);
      await caller(t, root)
        .post('/v1/admin/authority-permissions/bulk-grant', {
          items: [{ authority_id: authority, permission_id: 'x' }],
        })
        .expect(400);
    });

    it('grants 1000 items in one request', async () => {
      const device = await createDevice();
      const users = await sql<{ id: number }>(
        "INSERT INTO users (email, display_name, role_id, status_id) SELECT 'bulk-' || g || '-' || $1 || '@example.com', 'Bulk', 4, 2 FROM generate_series(1, 100) g RETURNING id",
        [Date.now()],
      );
      const authorities = await sql<{ id: number }>(
        'INSERT INTO authorities (device_id, user_id) SELECT $1, unnest($2::bigint[]) RETURNING id',
        [device.id, users.map((user) => user.id)],
      );
      const scoped = PERMISSIONS.filter((permission) =>
        /^(devices|authorities|authority_permissions)\./.test(permission.code),
      ).slice(0, 10);
      const items = authorities.flatMap((authority) =>
        scoped.map((permission) => ({ authority_id: authority.id, permission_id: permission.id })),
      );
      const response = await caller(t, root).post('/v1/admin/authority-permissions/bulk-grant', { items }).expect(200);
      expect(response.body.data).toMatchObject({ accepted: 1000, processed: 1000, failed: 0 });
      expect(
        await sql(
          'SELECT count(*)::int AS n FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id WHERE a.device_id = $1',
          [device.id],
        ),
      ).toEqual([{ n: 1000 }]);
    }, 60_000);
  });

  describe('/authz/check', () => {
    it('404 for an unknown user, permission or device; 400 for a malformed id', async () => {
      const user = await createUser();
      expect(
        (await caller(t, root).get('/v1/admin/authz/check?user_id=987654321&permission=users.read').expect(404)).body
          .error.code,
      ).toBe('USER_NOT_FOUND');
      expect(
        (await caller(t, root).get(`/v1/admin/authz/check?user_id=${user.id}&permission=users.fly`).expect(404)).body
          .error.code,
      ).toBe('PERMISSION_NOT_FOUND');
      expect(
        (
          await caller(t, root)
            .get(`/v1/admin/authz/check?user_id=${user.id}&permission=devices.read&device_id=987654321`)
            .expect(404)
        ).body.error.code,
      ).toBe('DEVICE_NOT_FOUND');
      await caller(t, root).get('/v1/admin/authz/check?user_id=abc&permission=users.read').expect(400);
      await caller(t, root).get(`/v1/admin/authz/check?user_id=${user.id}&permission=users.read&extra=1`).expect(400);
      expect(
        (await caller(t, root).get(`/v1/admin/authz/check?user_id=${user.id}&permission=users.read`).expect(200)).body
          .data,
      ).toEqual({
        user_id: user.id,
        permission: 'users.read',
        device_id: null,
        allowed: true,
        decided_by: 'role',
        authority_id: null,
        grant_id: null,
        group_id: null,
      });
    });
  });
});
