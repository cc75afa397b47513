import { PERMISSIONS, isDeviceScoped } from '../../src/platform/auth/permissions.js';
import { ROLES } from '../../src/platform/auth/roles.js';
import { actor } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';

describe('permission catalogue and roles (part 6.4)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ widgets: false });
  });
  afterAll(() => t.close());

  it('the migration seeded exactly the catalogue in src/auth (same ids, codes, scopes)', async () => {
    const permissions = await sql('SELECT id, code, device_scoped FROM permissions ORDER BY id');
    expect(permissions).toEqual(PERMISSIONS.map(({ id, code }) => ({ id, code, device_scoped: isDeviceScoped(code) })));
    expect(await sql('SELECT id, code, admin_access FROM roles ORDER BY id')).toEqual(
      ROLES.map(({ id, code, admin_access }) => ({ id, code, admin_access })),
    );
    expect(await sql('SELECT id, code FROM user_statuses ORDER BY id')).toEqual([
      { id: 1, code: 'pending' },
      { id: 2, code: 'active' },
      { id: 3, code: 'suspended' },
    ]);
  });

  it('GET /permissions lists the catalogue, searchable by code', async () => {
    const { auth } = await actor('viewer');
    const all = await t.http().get('/v1/admin/permissions?page_size=100').set('Authorization', auth).expect(200);
    expect(all.body.meta).toMatchObject({ total: 59, total_exact: true });
    expect(all.body.data[48]).toEqual({ id: 49, code: 'access_requests.approve', device_scoped: true });
    expect(all.body.data[12]).toEqual({ id: 13, code: 'authorities.read', device_scoped: true });
    // v1.3: groups and SCIM, ids 53–59 in the contract's order.
    expect(all.body.data.slice(52).map((p: { id: number; code: string }) => `${p.id} ${p.code}`)).toEqual([
      '53 groups.read',
      '54 groups.create',
      '55 groups.update',
      '56 groups.delete',
      '57 groups.restore',
      '58 groups.manage_members',
      '59 scim.provision',
    ]);
    const search = await t.http().get('/v1/admin/permissions?q=RESET').set('Authorization', auth).expect(200);
    expect(search.body.data).toEqual([{ id: 8, code: 'users.reset_pin', device_scoped: false }]);
    await t.http().get('/v1/admin/permissions?include_deleted=true').set('Authorization', auth).expect(400);
  });

  it('GET /roles lists each role with its permission codes', async () => {
    const { auth } = await actor('operator');
    const response = await t.http().get('/v1/admin/roles').set('Authorization', auth).expect(200);
    expect(response.body.data.map((role: { code: string }) => role.code)).toEqual([
      'super_admin',
      'admin',
      'operator',
      'viewer',
      'member',
    ]);
    expect(response.body.data[1].permissions).toHaveLength(54);
    expect(response.body.data[1].permissions).toContain('groups.manage_members');
    expect(response.body.data[1].permissions).not.toContain('scim.provision');
    expect(response.body.data[2].permissions).toContain('groups.read');
    expect(response.body.data[2].permissions).not.toContain('groups.create');
    expect(response.body.data[3].permissions).toContain('groups.read');
    expect(response.body.data[4]).toEqual({ id: 5, code: 'member', admin_access: false, permissions: [] });
  });
});
