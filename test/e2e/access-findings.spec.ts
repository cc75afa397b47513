import { AccessUses } from '../../src/access-model/access-uses.js';
import { accessWorld } from '../support/access-requests.js';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { testCachePrefix } from '../support/test-env.js';

interface Finding {
  user_id: number;
  device_id: number | null;
  permission_code: string;
  decided_by: string;
  authority_id: number | null;
  grant_id: number | null;
  authority_permission_id: number | null;
  granted_at: string;
  last_used_at: string | null;
}

/** `GET /access-findings` (part 6.16): revocable paths nobody has used for a number of days. */
describe('access findings', () => {
  let t: TestApp;
  let root: Caller;

  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('access-findings') });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const findings = async (query: string, who = root): Promise<Finding[]> =>
    (await t.http().get(`/v1/admin/access-findings?${query}`).set('Authorization', who.auth).expect(200)).body.data;
  const heldId = async (authority: number, code: string): Promise<number> => {
    const [row] = await sql<{ id: string }>(
      'SELECT id FROM authority_permissions WHERE authority_id = $1 AND permission_id = $2 AND revoked_at IS NULL',
      [authority, permissionId(code)],
    );
    return Number(row?.id);
  };

  it('lists the paths not used for the days asked, never-used ones included, with their last use', async () => {
    const world = await accessWorld(['authorities.read', 'devices.read']);
    const used = await heldId(world.authority, 'authorities.read');
    const unused = await heldId(world.authority, 'devices.read');
    await t
      .http()
      .get(`/v1/admin/authorities/${world.authority}`)
      .set('Authorization', world.operator.auth)
      .expect(200);
    await t.app.get(AccessUses).flush();
    const mine = `user_id=${world.operator.user.id}`;

    // Used a moment ago: not a finding; never used: a finding with no last use.
    const now = await findings(mine);
    expect(now).toEqual([
      {
        user_id: world.operator.user.id,
        group_id: null,
        device_id: world.device,
        permission_code: 'devices.read',
        decided_by: 'authority_permission',
        authority_id: world.authority,
        grant_id: null,
        authority_permission_id: unused,
        membership_id: null,
        granted_at: expect.any(String),
        last_used_at: null,
      },
    ]);
    // Its last use 100 days back: a finding by the default 90 days, not for 200.
    await sql(
      "UPDATE access_path_uses SET last_used_at = now() - interval '100 days' WHERE kind = 'a' AND path_id = $1",
      [used],
    );
    const stale = await findings(mine);
    expect(stale.map((finding) => finding.authority_permission_id).sort()).toEqual([used, unused].sort());
    expect(stale.find((finding) => finding.authority_permission_id === used)?.last_used_at).not.toBeNull();
    expect((await findings(`${mine}&unused_for_days=200`)).map((finding) => finding.authority_permission_id)).toEqual([
      unused,
    ]);
    // Oldest grant first by default; sort=granted_at:desc reverses the order.
    const newestFirst = await findings(`${mine}&sort=granted_at:desc`);
    expect(newestFirst.map((finding) => finding.authority_permission_id)).toEqual(
      stale.map((finding) => finding.authority_permission_id).reverse(),
    );
    // Filters: the device, the permission.
    expect(
      (await findings(`device_id=${world.device}`)).map((finding) => finding.authority_permission_id).sort(),
    ).toEqual([used, unused].sort());
    expect(
      (await findings(`${mine}&permission_id=${permissionId('devices.read')}`)).map(
        (finding) => finding.authority_permission_id,
      ),
    ).toEqual([unused]);
  });

  it('grants are findings too (not on a device); revoked paths and expired authorities are not', async () => {
    const viewer = await createUser({ role: 'viewer' });
    const granted = await t
      .http()
      .post('/v1/admin/permission-grants/grant')
      .set('Authorization', root.auth)
      .send({ user_id: viewer.id, permission_id: permissionId('audit.read') })
      .expect(201);
    const own = await findings(`user_id=${viewer.id}`);
    expect(own).toEqual([
      expect.objectContaining({
        device_id: null,
        decided_by: 'permission_grant',
        grant_id: granted.body.data.id,
        permission_code: 'audit.read',
        authority_id: null,
        authority_permission_id: null,
        last_used_at: null,
      }),
    ]);
    const world = await accessWorld(['devices.read']);
    expect(await findings(`device_id=${world.device}`)).toHaveLength(1);
    await sql("UPDATE authorities SET expires_at = now() - interval '1 second' WHERE id = $1", [world.authority]);
    expect(await findings(`device_id=${world.device}`)).toEqual([]);
    await t
      .http()
      .post('/v1/admin/permission-grants/revoke')
      .set('Authorization', root.auth)
      .send({ user_id: viewer.id, permission_id: permissionId('audit.read') })
      .expect(200);
    expect(await findings(`user_id=${viewer.id}`)).toEqual([]);
  });

  it('needs access.read; bad filters are 400 with the field named', async () => {
    const operator = await actor('operator');
    await t.http().get('/v1/admin/access-findings').set('Authorization', operator.auth).expect(403);
    for (const [query, field] of [
      ['unused_for_days=-1', 'unused_for_days'],
      ['unused_for_days=3651', 'unused_for_days'],
      ['device_id=abc', 'device_id'],
      ['user_id=0', 'user_id'],
      ['page_size=101', 'page_size'],
    ]) {
      const refused = await t
        .http()
        .get(`/v1/admin/access-findings?${query}`)
        .set('Authorization', root.auth)
        .expect(400);
      expect(refused.body.error.details.fields).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    }
    const page = await t
      .http()
      .get('/v1/admin/access-findings?page_size=1')
      .set('Authorization', root.auth)
      .expect(200);
    expect(page.body.meta).toMatchObject({ page: 1, page_size: 1 });
    expect(page.body.meta.total).toBeGreaterThanOrEqual(1);
    // The shared database holds every spec's findings: past 10 000 the total is an estimate (part 2).
    expect(page.body.meta.total_exact).toBe(page.body.meta.total <= 10_000);
  });
});
