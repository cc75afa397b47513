import { setTimeout as sleep } from 'node:timers/promises';
import { actor, createUser, permissionId, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';

type Variant = 'nothing' | 'authority_on_a' | 'owner_of_b' | 'user_grant' | 'delegate_on_a';
type DeviceName = 'A' | 'B' | 'C';
interface Who {
  readonly user: TestUser;
  readonly auth: string;
}

/** Part 5 written out independently of the service: who may do what, and which layer says so. */
function expected(variant: Variant, device: DeviceName, permission: string): string | null {
  if (variant === 'user_grant' && permission === 'authorities.revoke') return 'permission_grant';
  if (variant === 'owner_of_b' && device === 'B') return 'device_owner';
  if (variant === 'authority_on_a' && device === 'A' && permission === 'authorities.revoke')
    return 'authority_permission';
  // A delegate: on A it may grant authority permissions and read the device; a grant lets it read authorities everywhere.
  if (variant === 'delegate_on_a' && permission === 'authorities.read') return 'permission_grant';
  if (
    variant === 'delegate_on_a' &&
    device === 'A' &&
    (permission === 'authority_permissions.grant' || permission === 'devices.read')
  )
    return 'authority_permission';
  return null;
}

describe('the three authorization layers: operators on devices A, B and C (part 5)', () => {
  let t: TestApp;
  let root: Who;
  let operators: Record<Variant, Who>;
  let devices: Record<DeviceName, number>;
  let suspended: TestUser;

  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
    root = await actor('super_admin');
    operators = {
      nothing: await actor('operator'),
      authority_on_a: await actor('operator'),
      owner_of_b: await actor('operator'),
      user_grant: await actor('operator'),
      delegate_on_a: await actor('operator'),
    };
    devices = {
      A: (await createDevice()).id,
      B: (await createDevice({ ownerId: operators.owner_of_b.user.id })).id,
      C: (await createDevice()).id,
    };
    await createAuthority(devices.A, operators.authority_on_a.user.id, { permissions: ['authorities.revoke'] });
    await caller(t, root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: operators.user_grant.user.id,
        permission_id: permissionId('authorities.revoke'),
      })
      .expect(201);
    await createAuthority(devices.A, operators.delegate_on_a.user.id, {
      permissions: ['authority_permissions.grant', 'devices.read'],
    });
    await caller(t, root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: operators.delegate_on_a.user.id,
        permission_id: permissionId('authorities.read'),
      })
      .expect(201);
    suspended = await createUser({ status: 'suspended' });
  });
  afterAll(() => t.close());

  /**
   * The user's row in a device's access list, if listed. Operators hold nothing by role, so the
   * list is asked without role-holders (every super admin of the shared database).
   */
  async function deviceAccessOf(
    device: number,
    permission: string,
    userId: number,
  ): Promise<{ user_id: number; allowed_by: { decided_by: string }[] } | undefined> {
    for (let page = 1; ; page += 1) {
      const response = await caller(t, root)
        .get(
          `/v1/admin/devices/${device}/access?permission=${permission}&via=permission_grant,device_owner,authority_permission&page_size=100&page=${page}`,
        )
        .expect(200);
      const rows = response.body.data as { user_id: number; allowed_by: { decided_by: string }[] }[];
      const found = rows.find((row) => row.user_id === userId);
      if (found !== undefined || page * 100 >= response.body.meta.total) return found;
    }
  }

  /** A fresh bystander authority on the device (with one authority permission) to act on. */
  async function target(device: DeviceName): Promise<{ authority: number; authorityPermission: number }> {
    const authority = await createAuthority(devices[device], (await createUser()).id, {
      permissions: ['devices.read'],
    });
    const [row] = await sql<{ id: number }>('SELECT id FROM authority_permissions WHERE authority_id = $1', [
      authority,
    ]);
    return { authority, authorityPermission: row?.id ?? 0 };
  }

  // One route per device-scoped permission; each sends a request that passes validation, so
  // any answer other than 403 means the guard (or the service's device check) let it through.
  const ACTIONS: Record<
    string,
    (who: Who, device: DeviceName) => Promise<{ status: number; body: { error?: { code: string; details: unknown } } }>
  > = {
    'devices.read': (who, device) => caller(t, who).get(`/v1/admin/devices/${devices[device]}`),
    'devices.update': (who, device) =>
      caller(t, who).patch(`/v1/admin/devices/${devices[device]}`, { name: `renamed ${Date.now()}` }),
    'devices.transfer_owner': (who, device) =>
      caller(t, who).post(`/v1/admin/devices/${devices[device]}/transfer-owner`, { new_owner_user_id: suspended.id }),
    'authorities.read': async (who, device) =>
      caller(t, who).get(`/v1/admin/authorities/${(await target(device)).authority}`),
    'authorities.create': async (who, device) =>
      caller(t, who).post('/v1/admin/authorities', { device_id: devices[device], user_id: (await createUser()).id }),
    'authorities.update': async (who, device) =>
      caller(t, who).patch(`/v1/admin/authorities/${(await target(device)).authority}`, { label: 'x' }),
    'authorities.delete': async (who, device) =>
      caller(t, who).delete(`/v1/admin/authorities/${(await target(device)).authority}`),
    'authorities.restore': async (who, device) =>
      caller(t, who).post(`/v1/admin/authorities/${(await target(device)).authority}/restore`),
    'authorities.activate': async (who, device) =>
      caller(t, who).post(`/v1/admin/authorities/${(await target(device)).authority}/activate`),
    'authorities.deactivate': async (who, device) =>
      caller(t, who).post(`/v1/admin/authorities/${(await target(device)).authority}/deactivate`),
    'authorities.revoke': async (who, device) =>
      caller(t, who).post(`/v1/admin/authorities/${(await target(device)).authority}/revoke`),
    'authority_permissions.read': async (who, device) =>
      caller(t, who).get(`/v1/admin/authority-permissions/${(await target(device)).authorityPermission}`),
    'authority_permissions.grant': async (who, device) =>
      caller(t, who).post('/v1/admin/authority-permissions', {
        authority_id: (await target(device)).authority,
        permission_id: permissionId('authorities.read'),
      }),
    'authority_permissions.revoke': async (who, device) =>
      caller(t, who).delete(`/v1/admin/authority-permissions/${(await target(device)).authorityPermission}`),
  };

  const VARIANTS: Variant[] = ['nothing', 'authority_on_a', 'owner_of_b', 'user_grant', 'delegate_on_a'];
  const DEVICES: DeviceName[] = ['A', 'B', 'C'];

  it.each(VARIANTS)(
    'operator with %s: every device-scoped action on A, B and C, and /authz/check agrees',
    async (variant) => {
      const who = operators[variant];
      const cells: string[] = [];
      for (const device of DEVICES) {
        for (const [permission, act] of Object.entries(ACTIONS)) {
          const decidedBy = expected(variant, device, permission);
          const response = await act(who, device);
          expect(response.status).toBeLessThan(500);
          const guard = response.status === 403 ? 'denied' : 'allowed';
          if (response.status === 403)
            expect(response.body.error).toEqual({
              code: 'PERMISSION_DENIED',
              message: expect.any(String),
              details: { permission, device_id: devices[device] },
            });
          const check = await caller(t, root)
            .get(`/v1/admin/authz/check?user_id=${who.user.id}&permission=${permission}&device_id=${devices[device]}`)
            .expect(200);
          cells.push(
            `${device} ${permission}: guard ${guard}, check ${check.body.data.allowed ? 'allowed' : 'denied'} by ${check.body.data.decided_by}`,
          );
          expect(check.body.data).toMatchObject({ allowed: decidedBy !== null, decided_by: decidedBy });
          // The access lists (part 6.13) agree with the cell, and give the same first reason.
          const listed = await deviceAccessOf(devices[device], permission, who.user.id);
          expect(listed?.allowed_by[0]?.decided_by ?? null).toBe(decidedBy);
          const where = await caller(t, root)
            .get(`/v1/admin/users/${who.user.id}/access?permission=${permission}&page_size=100`)
            .expect(200);
          const onDevice = (where.body.data as { device_id: number }[]).some(
            (row) => row.device_id === devices[device],
          );
          expect(where.body.meta.scope === 'all' || onDevice).toBe(decidedBy !== null);
        }
      }
      const wanted = DEVICES.flatMap((device) =>
        Object.keys(ACTIONS).map((permission) => {
          const decidedBy = expected(variant, device, permission);
          return `${device} ${permission}: guard ${decidedBy === null ? 'denied' : 'allowed'}, check ${decidedBy === null ? 'denied' : 'allowed'} by ${decidedBy}`;
        }),
      );
      expect(cells).toEqual(wanted);
    },
    120_000,
  );

  // The delegation column (part 5): each operator tries to hand on every device-scoped right, on
  // A, B and C, to another user's authority. The route needs authority_permissions.grant on the
  // device; handing on P needs holding P there (any layer); else DELEGATION_FORBIDDEN.
  it.each(VARIANTS)(
    'delegation: operator with %s hands on each device-scoped right it has and has not',
    async (variant) => {
      const who = operators[variant];
      const cells: string[] = [];
      const wanted: string[] = [];
      for (const device of DEVICES) {
        const bystander = await createAuthority(devices[device], (await createUser()).id);
        for (const permission of Object.keys(ACTIONS)) {
          const response = await caller(t, who).post('/v1/admin/authority-permissions', {
            authority_id: bystander,
            permission_id: permissionId(permission),
          });
          expect(response.status).toBeLessThan(500);
          const code = response.status === 201 ? 'granted' : (response.body.error?.code ?? String(response.status));
          cells.push(`${device} ${permission}: ${code}`);
          if (code === 'PERMISSION_DENIED')
            expect(response.body.error?.details).toEqual({
              permission: 'authority_permissions.grant',
              device_id: devices[device],
            });
          if (code === 'DELEGATION_FORBIDDEN')
            expect(response.body.error?.details).toEqual({ permission, device_id: devices[device] });
          const route = expected(variant, device, 'authority_permissions.grant') !== null;
          wanted.push(
            `${device} ${permission}: ${!route ? 'PERMISSION_DENIED' : expected(variant, device, permission) === null ? 'DELEGATION_FORBIDDEN' : 'granted'}`,
          );
        }
        const rows = await sql<{ code: string }>(
          'SELECT p.code FROM authority_permissions ap JOIN permissions p ON p.id = ap.permission_id WHERE ap.authority_id = $1 ORDER BY p.code',
          [bystander],
        );
        expect(rows.map((row) => row.code)).toEqual(
          Object.keys(ACTIONS)
            .filter((permission) => cells.includes(`${device} ${permission}: granted`))
            .sort(),
        );
      }
      expect(cells).toEqual(wanted);
    },
    120_000,
  );

  it('filters list rows: without the global read an operator sees only the devices its authorities allow', async () => {
    const ids = async (who: Who, path: string): Promise<number[]> =>
      ((await caller(t, who).get(path).expect(200)).body.data as { device_id?: number; id: number }[]).map(
        (row) => row.device_id ?? row.id,
      );
    expect(new Set(await ids(operators.owner_of_b, '/v1/admin/authorities?page_size=100'))).toEqual(
      new Set([devices.B]),
    );
    expect(await ids(operators.owner_of_b, '/v1/admin/devices?page_size=100')).toEqual([devices.B]);
    expect(await ids(operators.nothing, '/v1/admin/authorities?page_size=100')).toEqual([]);
    expect(await ids(operators.authority_on_a, '/v1/admin/devices?page_size=100')).toEqual([]);
    expect(
      (
        await caller(t, operators.owner_of_b).get('/v1/admin/authority-permissions?page_size=100').expect(200)
      ).body.data.every((row: { device_id: number }) => row.device_id === devices.B),
    ).toBe(true);
    const all = await ids(root, `/v1/admin/authorities?device_id=${devices.C}&page_size=100`);
    expect(all.length).toBeGreaterThan(0);
  });

  it('a deactivation, a revoke or an expiry takes effect on the very next request', async () => {
    const holder = await actor('operator');
    const device = (await createDevice()).id;
    const authority = await createAuthority(device, holder.user.id, { permissions: ['devices.read'] });
    await caller(t, holder).get(`/v1/admin/devices/${device}`).expect(200);
    await caller(t, root).post(`/v1/admin/authorities/${authority}/deactivate`).expect(200);
    await caller(t, holder).get(`/v1/admin/devices/${device}`).expect(403);
    await caller(t, root).post(`/v1/admin/authorities/${authority}/activate`).expect(200);
    await caller(t, holder).get(`/v1/admin/devices/${device}`).expect(200);
    await caller(t, root).post(`/v1/admin/authorities/${authority}/revoke`).expect(200);
    await caller(t, holder).get(`/v1/admin/devices/${device}`).expect(403);

    const expiring = await createAuthority((await createDevice()).id, holder.user.id, {
      permissions: ['devices.read'],
      expiresAt: new Date(Date.now() + 1500),
    });
    const [{ device_id: other } = { device_id: 0 }] = await sql<{ device_id: number }>(
      'SELECT device_id FROM authorities WHERE id = $1',
      [expiring],
    );
    await caller(t, holder).get(`/v1/admin/devices/${other}`).expect(200);
    await sleep(1700);
    await caller(t, holder).get(`/v1/admin/devices/${other}`).expect(403);
  });

  it('a missing record is a 404 before any device check', async () => {
    expect((await caller(t, operators.nothing).get('/v1/admin/devices/987654321').expect(404)).body.error.code).toBe(
      'DEVICE_NOT_FOUND',
    );
    expect(
      (await caller(t, operators.nothing).post('/v1/admin/authorities/987654321/revoke').expect(404)).body.error.code,
    ).toBe('AUTHORITY_NOT_FOUND');
    expect(
      (
        await caller(t, operators.nothing)
          .post('/v1/admin/authorities', { device_id: 987654321, user_id: operators.nothing.user.id })
          .expect(404)
      ).body.error.code,
    ).toBe('DEVICE_NOT_FOUND');
  });
});
