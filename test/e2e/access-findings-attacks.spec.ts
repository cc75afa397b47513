import { AccessUses } from '../../src/access-model/access-uses.js';
import { AccessUsesRepository } from '../../src/access-model/access-uses.repository.js';
import { accessWorld } from '../support/access-requests.js';
import { actor, createUser, permissionId, tokenFor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { testCachePrefix } from '../support/test-env.js';

interface Finding {
  decided_by: string;
  grant_id: number | null;
  authority_permission_id: number | null;
  granted_at: string;
  last_used_at: string | null;
}

/** Adversarial review of part 6.16 (last use, `GET /access-findings`). */
describe('access findings: attacks', () => {
  let t: TestApp;
  let root: Caller;
  let uses: AccessUses;

  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('access-findings-attacks') });
    root = await actor('super_admin');
    uses = t.app.get(AccessUses);
  });
  afterAll(() => t.close());

  const findings = async (query: string): Promise<Finding[]> =>
    (await t.http().get(`/v1/admin/access-findings?${query}`).set('Authorization', root.auth).expect(200)).body.data;
  const usesOf = (kind: 'g' | 'a', id: number) =>
    sql<{ last_used_at: Date }>('SELECT last_used_at FROM access_path_uses WHERE kind = $1 AND path_id = $2', [
      kind,
      id,
    ]);
  const liveHeld = async (authority: number, code: string): Promise<number> => {
    const [row] = await sql<{ id: string }>(
      'SELECT id FROM authority_permissions WHERE authority_id = $1 AND permission_id = $2 AND revoked_at IS NULL ORDER BY id DESC LIMIT 1',
      [authority, permissionId(code)],
    );
    return Number(row?.id);
  };

  it('records a grant-allowed request on a check: service route (GET /devices)', async () => {
    const operator = await createUser({ role: 'operator' });
    const granted = await t
      .http()
      .post('/v1/admin/permission-grants/grant')
      .set('Authorization', root.auth)
      .send({ user_id: operator.id, permission_id: permissionId('devices.read') })
      .expect(201);
    const token = await tokenFor(operator);
    await t.http().get('/v1/admin/devices?page_size=1').set('Authorization', `Bearer ${token}`).expect(200);
    await uses.flush();
    // The request was allowed only by the grant: its use must be recorded (part 6.16).
    expect(await usesOf('g', granted.body.data.id as number)).toHaveLength(1);
  });

  it('records an authority-permission-allowed request on a check: service route (GET /devices)', async () => {
    const world = await accessWorld(['devices.read']);
    const held = await liveHeld(world.authority, 'devices.read');
    const listed = await t.http().get('/v1/admin/devices').set('Authorization', world.operator.auth).expect(200);
    expect((listed.body.data as { id: number }[]).map((device) => device.id)).toContain(world.device);
    await uses.flush();
    expect(await usesOf('a', held)).toHaveLength(1);
  });

  it('a new authority permission does not inherit the last use of an expired one of the same pair', async () => {
    const world = await accessWorld([]);
    await sql(
      "INSERT INTO authority_permissions (authority_id, permission_id, expires_at) VALUES ($1, $2, now() + interval '1500 milliseconds')",
      [world.authority, permissionId('devices.read')],
    );
    const old = await liveHeld(world.authority, 'devices.read');
    await t.http().get(`/v1/admin/devices/${world.device}`).set('Authorization', world.operator.auth).expect(200);
    await uses.flush();
    expect(await usesOf('a', old)).toHaveLength(1);
    // The old path expires (not revoked: expiry leaves revoked_at null); a new one is granted.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const regranted = await t
      .http()
      .post('/v1/admin/authority-permissions')
      .set('Authorization', root.auth)
      .send({ authority_id: world.authority, permission_id: permissionId('devices.read') })
      .expect(201);
    const fresh = regranted.body.data.id as number;
    expect(fresh).not.toBe(old);

    // Findings: the new path was never used.
    const listed = await findings(`device_id=${world.device}`);
    expect(listed).toEqual([expect.objectContaining({ authority_permission_id: fresh, last_used_at: null })]);
    // The access question must agree: never used (not the expired row's use, before it was granted).
    const question = await t
      .http()
      .get(`/v1/admin/devices/${world.device}/access?permission=devices.read&via=authority_permission`)
      .set('Authorization', root.auth)
      .expect(200);
    const [way] = question.body.data[0].allowed_by as { last_used_at: string | null }[];
    expect(way?.last_used_at).toBeNull();

    // A use through the live path must not be written onto the expired one.
    const [expired] = await usesOf('a', old);
    await t.app.get(AccessUsesRepository).record({
      grants: [],
      authorityPermissions: [
        { authority_id: world.authority, permission_id: permissionId('devices.read'), at: new Date() },
      ],
    });
    const [after] = await usesOf('a', old);
    expect(after?.last_used_at.getTime()).toBe(expired?.last_used_at.getTime());
    expect(await usesOf('a', fresh)).toHaveLength(1);
  });

  it('held: a use noted before a revoke and re-grant never lands on the new path; last use never goes back', async () => {
    const world = await accessWorld(['authorities.read']);
    const first = await liveHeld(world.authority, 'authorities.read');
    const noted = new Date(Date.now() - 1000);
    await sql('UPDATE authority_permissions SET revoked_at = now() WHERE id = $1', [first]);
    await sql('INSERT INTO authority_permissions (authority_id, permission_id) VALUES ($1, $2)', [
      world.authority,
      permissionId('authorities.read'),
    ]);
    const second = await liveHeld(world.authority, 'authorities.read');
    const repository = t.app.get(AccessUsesRepository);
    const pair = { authority_id: world.authority, permission_id: permissionId('authorities.read') };
    await repository.record({ grants: [], authorityPermissions: [{ ...pair, at: noted }] });
    expect(await usesOf('a', first)).toEqual([]);
    expect(await usesOf('a', second)).toEqual([]);
    // Forward only: an older batch (another instance, a late flush) never moves it back.
    const later = new Date();
    await repository.record({ grants: [], authorityPermissions: [{ ...pair, at: later }] });
    await repository.record({ grants: [], authorityPermissions: [{ ...pair, at: new Date(later.getTime() - 5000) }] });
    expect((await usesOf('a', second))[0]?.last_used_at.getTime()).toBe(later.getTime());
  });

  it('held: ties in granted_at across grants and authority permissions page without gaps or repeats', async () => {
    const user = await createUser({ role: 'viewer' });
    const owner = await createUser({ role: 'operator' });
    const authority = await createAuthority((await createDevice({ ownerId: owner.id })).id, user.id);
    const at = '2026-01-01T00:00:00Z';
    for (const code of ['devices.read', 'authorities.read', 'authority_permissions.read'])
      await sql('INSERT INTO authority_permissions (authority_id, permission_id, granted_at) VALUES ($1, $2, $3)', [
        authority,
        permissionId(code),
        at,
      ]);
    for (const code of ['audit.read', 'jobs.read', 'access.read'])
      await sql(
        'INSERT INTO permission_grants (user_id, permission_id, reason, granted_by, granted_at) VALUES ($1, $2, $3, $4, $5)',
        [user.id, permissionId(code), 'tie', root.user.id, at],
      );
    const all = await findings(`user_id=${user.id}&page_size=100`);
    expect(all).toHaveLength(6);
    const walked: string[] = [];
    for (let page = 1; page <= 6; page += 1)
      for (const row of await findings(`user_id=${user.id}&page_size=1&page=${page}`))
        walked.push(`${row.decided_by}:${row.grant_id ?? row.authority_permission_id}`);
    expect(walked).toEqual(all.map((row) => `${row.decided_by}:${row.grant_id ?? row.authority_permission_id}`));
    const desc = await findings(`user_id=${user.id}&page_size=100&sort=granted_at:desc`);
    expect(desc).toEqual([...all].reverse());
  });

  it('held: hostile query input is 400, a huge page is an empty 200, no access.read is 403', async () => {
    for (const query of [
      'unused_for_days=1e3',
      'unused_for_days=1&unused_for_days=2',
      'unused_for_days=0x10',
      'unused_for_days=9999',
      'sort=',
      'sort=granted_at',
      'sort=last_used_at:asc',
      'sort=granted_at:asc&sort=granted_at:desc',
      'user_id=1e3',
      'permission_id=9999999999999999',
      'page=0',
    ])
      await t.http().get(`/v1/admin/access-findings?${query}`).set('Authorization', root.auth).expect(400);
    const huge = await t
      .http()
      .get('/v1/admin/access-findings?page=1000000000&page_size=100')
      .set('Authorization', root.auth)
      .expect(200);
    expect(huge.body.data).toEqual([]);
    const hugest = await t
      .http()
      .get(`/v1/admin/access-findings?page=${Number.MAX_SAFE_INTEGER}&page_size=100`)
      .set('Authorization', root.auth);
    expect([200, 400]).toContain(hugest.status);
    const operator = await actor('operator');
    await t.http().get('/v1/admin/access-findings').set('Authorization', operator.auth).expect(403);
  });
});
