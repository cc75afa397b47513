import { jest } from '@jest/globals';
import { trackedActors, unique } from '../support/groups.js';
import { createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';
import { createAuthority, createDevice, moreAuthorities } from '../support/devices.js';
import { testCachePrefix } from '../support/test-env.js';
import { DEFAULT_AUTH_CONTEXT_AUTHORITIES as CAP } from '../../src/platform/config/settings.js';

/**
 * Independent hostile review of groups holding authorities on devices (contract v1.3, parts 5,
 * 6.3, 6.6, 6.17, 6.18). Each test states what a client would notice.
 */

const realNow = Date.now;
type Who = { auth: string };

const { actor } = trackedActors();

describe('group authorities: attacks', () => {
  afterEach(() => jest.restoreAllMocks());
  // Two instances sharing one cache (carried authorities), two more sharing another cache and
  // carrying no authorities at all (AUTH_CONTEXT_AUTHORITIES=0: the device's set decides).
  let a: TestApp;
  let b: TestApp;
  let c0: TestApp;
  let d0: TestApp;
  let root: Caller;
  beforeAll(async () => {
    const shared = testCachePrefix('ga-attacks');
    const bare = testCachePrefix('ga-attacks-0');
    [a, b, c0, d0] = await Promise.all([
      startApp({ widgets: false, cachePrefix: shared }),
      startApp({ widgets: false, cachePrefix: shared }),
      startApp({ widgets: false, cachePrefix: bare, env: { AUTH_CONTEXT_AUTHORITIES: '0' } }),
      startApp({ widgets: false, cachePrefix: bare, env: { AUTH_CONTEXT_AUTHORITIES: '0' } }),
    ]);
    root = await actor('super_admin');
  });
  afterAll(() => Promise.all([a.close(), b.close(), c0.close(), d0.close()]));

  async function group(t: TestApp = a, body: Record<string, unknown> = {}, by: Who = root): Promise<number> {
    const created = await caller(t, by)
      .post('/v1/admin/groups', { name: unique('ga'), ...body })
      .expect(201);
    return created.body.data.id as number;
  }

  async function add(t: TestApp, groupId: number, members: object[], by: Who = root, extra: object = {}) {
    const res = await caller(t, by).post(`/v1/admin/groups/${groupId}/members`, { members, ...extra });
    expect(res.status).toBe(200);
    return res;
  }

  async function groupAuthority(t: TestApp, deviceId: number, groupId: number, by: Who = root): Promise<number> {
    const res = await caller(t, by).post('/v1/admin/authorities', { device_id: deviceId, group_id: groupId });
    expect(res.status).toBe(201);
    return res.body.data.id as number;
  }

  async function grantAp(t: TestApp, authorityId: number, code: string, by: Who = root): Promise<number> {
    const res = await caller(t, by).post('/v1/admin/authority-permissions', {
      authority_id: authorityId,
      permission_id: permissionId(code),
    });
    expect(res.status).toBe(201);
    return res.body.data.id as number;
  }

  /**
   * An operator reached by `outer` (through `inner` when nested), `outer` holding an authority on a
   * device with `authorities.read`; `target` is another user's authority there.
   */
  async function setup(t: TestApp, nested: boolean, codes: string[] = ['authorities.read']) {
    const operator = await actor('operator');
    const device = await createDevice();
    const target = await createAuthority(device.id, (await createUser()).id);
    const inner = await group(t);
    const outer = nested ? await group(t) : inner;
    await add(t, inner, [{ user_id: operator.user.id }]);
    if (nested) await add(t, outer, [{ group_id: inner }]);
    const authority = await groupAuthority(t, device.id, outer);
    const aps: number[] = [];
    for (const code of codes) aps.push(await grantAp(t, authority, code));
    return { operator, device: device.id, target, inner, outer, authority, aps };
  }

  const read = (t: TestApp, who: Who, target: number) => caller(t, who).get(`/v1/admin/authorities/${target}`);

  type Setup = Awaited<ReturnType<typeof setup>>;
  const changes: [string, boolean, (t: TestApp, s: Setup) => Promise<unknown>][] = [
    [
      'remove the member',
      false,
      (t, s) =>
        caller(t, root)
          .post(`/v1/admin/groups/${s.inner}/members/remove`, { members: [{ user_id: s.operator.user.id }] })
          .expect(200),
    ],
    [
      'un-nest the inner group',
      true,
      (t, s) =>
        caller(t, root)
          .post(`/v1/admin/groups/${s.outer}/members/remove`, { members: [{ group_id: s.inner }] })
          .expect(200),
    ],
    ['delete the outer group', true, (t, s) => caller(t, root).delete(`/v1/admin/groups/${s.outer}`).expect(200)],
    ['delete the inner group', true, (t, s) => caller(t, root).delete(`/v1/admin/groups/${s.inner}`).expect(200)],
    [
      'revoke the group’s authority',
      true,
      (t, s) => caller(t, root).post(`/v1/admin/authorities/${s.authority}/revoke`, {}).expect(200),
    ],
    [
      'deactivate the group’s authority',
      true,
      (t, s) => caller(t, root).post(`/v1/admin/authorities/${s.authority}/deactivate`, {}).expect(200),
    ],
    [
      'delete the group’s authority',
      true,
      (t, s) =>
        caller(t, root)
          .delete(`/v1/admin/authorities/${s.authority}`)
          .expect((r) => expect([200, 204]).toContain(r.status)),
    ],
    [
      'revoke its authority permission',
      true,
      (t, s) =>
        caller(t, root)
          .delete(`/v1/admin/authority-permissions/${s.aps[0]}`)
          .expect((r) => expect([200, 204]).toContain(r.status)),
    ],
    [
      'bulk-revoke its authority permission',
      true,
      async (t, s) => {
        const res = await caller(t, root)
          .post('/v1/admin/authority-permissions/bulk-revoke', {
            items: [{ authority_id: s.authority, permission_id: permissionId('authorities.read') }],
          })
          .expect(200);
        expect(res.body.data.results[0].status).toBe('revoked');
      },
    ],
  ];

  describe.each([
    ['carried authorities', () => [a, b] as const],
    ['AUTH_CONTEXT_AUTHORITIES=0', () => [c0, d0] as const],
  ])('losing, %s', (_mode, apps) => {
    it.each(
      changes.flatMap(([name, nested, change]) => [
        [name, nested, change, 'same'] as const,
        [name, nested, change, 'other'] as const,
      ]),
    )('%s: the very next request on the %s instance is refused', async (_name, nested, change, where) => {
      const [w, r0] = apps();
      const r = where === 'same' ? w : r0;
      const s = await setup(w, nested);
      // Warm both instances' view (context and device set).
      await read(w, s.operator, s.target).expect(200);
      await read(r, s.operator, s.target).expect(200);
      await change(w, s);
      const after = await read(r, s.operator, s.target);
      expect({ status: after.status, code: after.body.error?.code }).toEqual({
        status: 403,
        code: 'PERMISSION_DENIED',
      });
    });
  });

  it(`losing, over the cap (${CAP}+ authorities): removing the member refuses the next request on the other instance`, async () => {
    const s = await setup(a, true);
    await moreAuthorities(s.operator.user.id, CAP);
    await caller(a, root).post('/v1/admin/cache/rebuild', { scope: 'auth' }); // best effort; contexts also rebuild below
    await read(a, s.operator, s.target).expect(200);
    await read(b, s.operator, s.target).expect(200);
    await caller(a, root)
      .post(`/v1/admin/groups/${s.outer}/members/remove`, { members: [{ group_id: s.inner }] })
      .expect(200);
    await read(b, s.operator, s.target).expect(403);
  });

  describe.each([
    ['carried authorities', () => [a, b] as const],
    ['AUTH_CONTEXT_AUTHORITIES=0', () => [c0, d0] as const],
  ])('expiry, %s', (_mode, apps) => {
    it('a group authority’s expires_at ends the member’s right at its instant (no write)', async () => {
      const [w, r] = apps();
      const s = await setup(w, true);
      const soon = new Date(realNow() + 10 * 60_000).toISOString();
      await caller(w, root).patch(`/v1/admin/authorities/${s.authority}`, { expires_at: soon }).expect(200);
      await read(r, s.operator, s.target).expect(200);
      jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 20 * 60_000);
      await read(r, s.operator, s.target).expect(403);
    });

    it('a nested membership’s expires_at ends the member’s right at its instant', async () => {
      const [w, r] = apps();
      const operator = await actor('operator');
      const device = await createDevice();
      const target = await createAuthority(device.id, (await createUser()).id);
      const inner = await group(w);
      const outer = await group(w);
      await add(w, inner, [{ user_id: operator.user.id }]);
      await add(w, outer, [{ group_id: inner }], root, { expires_at: new Date(realNow() + 10 * 60_000).toISOString() });
      const authority = await groupAuthority(w, device.id, outer);
      await grantAp(w, authority, 'authorities.read');
      await read(r, operator, target).expect(200);
      jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 20 * 60_000);
      await read(r, operator, target).expect(403);
    });
  });

  describe.each([
    ['carried authorities', () => [a, b] as const],
    ['AUTH_CONTEXT_AUTHORITIES=0', () => [c0, d0] as const],
  ])('gaining, %s', (_mode, apps) => {
    it('a new group authority with a permission allows at once on the other instance', async () => {
      const [w, r] = apps();
      const operator = await actor('operator');
      const device = await createDevice();
      const target = await createAuthority(device.id, (await createUser()).id);
      const team = await group(w);
      await add(w, team, [{ user_id: operator.user.id }]);
      await read(r, operator, target).expect(403);
      const authority = await groupAuthority(w, device.id, team);
      await read(r, operator, target).expect(403);
      await grantAp(w, authority, 'authorities.read');
      await read(r, operator, target).expect(200);
    });

    it('adding the member (nested) to a group holding the authority allows at once on the other instance', async () => {
      const [w, r] = apps();
      const operator = await actor('operator');
      const device = await createDevice();
      const target = await createAuthority(device.id, (await createUser()).id);
      const inner = await group(w);
      const outer = await group(w);
      await add(w, inner, [{ user_id: operator.user.id }]);
      await grantAp(w, await groupAuthority(w, device.id, outer), 'authorities.read');
      await read(r, operator, target).expect(403);
      await add(w, outer, [{ group_id: inner }]);
      await read(r, operator, target).expect(200);
    });

    it('restoring a deleted group authority gives the right back at once on the other instance', async () => {
      const [w, r] = apps();
      const s = await setup(w, true);
      await read(r, s.operator, s.target).expect(200);
      await caller(w, root)
        .delete(`/v1/admin/authorities/${s.authority}`)
        .expect((x) => expect([200, 204]).toContain(x.status));
      await read(r, s.operator, s.target).expect(403);
      await caller(w, root).post(`/v1/admin/authorities/${s.authority}/restore`).expect(200);
      await read(r, s.operator, s.target).expect(200);
      await caller(w, root).post(`/v1/admin/authorities/${s.authority}/deactivate`, {}).expect(200);
      await read(r, s.operator, s.target).expect(403);
      await caller(w, root).post(`/v1/admin/authorities/${s.authority}/activate`, {}).expect(200);
      await read(r, s.operator, s.target).expect(200);
    });

    it('restoring a deleted group gives its authority back at once on the other instance', async () => {
      const [w, r] = apps();
      const s = await setup(w, true);
      await read(r, s.operator, s.target).expect(200);
      await caller(w, root).delete(`/v1/admin/groups/${s.outer}`).expect(200);
      await read(r, s.operator, s.target).expect(403);
      await caller(w, root).post(`/v1/admin/groups/${s.outer}/restore`).expect(200);
      await read(r, s.operator, s.target).expect(200);
    });
  });

  describe('the rules of part 5 on a group’s authority', () => {
    it('self: a member with authority_permissions.grant on the device cannot grant to its (nested) group’s authority, single or bulk', async () => {
      const operator = await actor('operator');
      const device = await createDevice();
      await createAuthority(device.id, operator.user.id, {
        permissions: ['authority_permissions.grant', 'authorities.read', 'authorities.update'],
      });
      const inner = await group();
      const outer = await group();
      await add(a, inner, [{ user_id: operator.user.id }]);
      await add(a, outer, [{ group_id: inner }]);
      const authority = await groupAuthority(a, device.id, outer);
      const single = await caller(a, operator).post('/v1/admin/authority-permissions', {
        authority_id: authority,
        permission_id: permissionId('authorities.read'),
      });
      expect({ status: single.status, code: single.body.error?.code }).toEqual({
        status: 422,
        code: 'SELF_ACTION_FORBIDDEN',
      });
      const bulk = await caller(a, operator)
        .post('/v1/admin/authority-permissions/bulk-grant', {
          items: [{ authority_id: authority, permission_id: permissionId('authorities.read') }],
        })
        .expect(200);
      expect(bulk.body.data.results[0].error?.code).toBe('SELF_ACTION_FORBIDDEN');
      const dry = await caller(a, operator).post('/v1/admin/authority-permissions?dry_run=true', {
        authority_id: authority,
        permission_id: permissionId('authorities.read'),
      });
      expect(dry.status).toBe(422);
      const [row] = await sql<{ count: string }>('SELECT count(*) FROM authority_permissions WHERE authority_id = $1', [
        authority,
      ]);
      expect(Number(row?.count)).toBe(0);
    });

    it('self: a member with authorities.create on the device cannot create an authority for its nested group', async () => {
      const operator = await actor('operator');
      const device = await createDevice();
      await createAuthority(device.id, operator.user.id, { permissions: ['authorities.create'] });
      const inner = await group();
      const outer = await group();
      await add(a, inner, [{ user_id: operator.user.id }]);
      await add(a, outer, [{ group_id: inner }]);
      const res = await caller(a, operator).post('/v1/admin/authorities', { device_id: device.id, group_id: outer });
      expect({ status: res.status, code: res.body.error?.code }).toEqual({
        status: 422,
        code: 'SELF_ACTION_FORBIDDEN',
      });
    });

    it('self: a member who holds authorities.update only through its group’s authority cannot extend that authority', async () => {
      const s = await setup(a, true, ['authorities.read', 'authorities.update']);
      const soon = new Date(realNow() + 10 * 60_000).toISOString();
      await caller(a, root).patch(`/v1/admin/authorities/${s.authority}`, { expires_at: soon }).expect(200);
      const forever = await caller(a, s.operator).patch(`/v1/admin/authorities/${s.authority}`, { expires_at: null });
      expect({ status: forever.status, code: forever.body.error?.code }).toEqual({
        status: 422,
        code: 'SELF_ACTION_FORBIDDEN',
      });
      const later = await caller(a, s.operator).patch(`/v1/admin/authorities/${s.authority}`, {
        expires_at: new Date(realNow() + 3 * 3600_000).toISOString(),
      });
      expect(later.status).toBe(422);
      const [row] = await sql<{ expires_at: Date | null }>('SELECT expires_at FROM authorities WHERE id = $1', [
        s.authority,
      ]);
      expect(row?.expires_at?.toISOString()).toBe(soon);
    });

    it('self: a member cannot restore/activate its own group’s authority through a right given by its own other authority... (activate after deactivate)', async () => {
      // A member holding authorities.activate on the device by its own authority re-activates
      // its group's authority: not forbidden by the contract (only extension is); recorded only.
      const operator = await actor('operator');
      const device = await createDevice();
      await createAuthority(device.id, operator.user.id, { permissions: ['authorities.activate'] });
      const team = await group();
      await add(a, team, [{ user_id: operator.user.id }]);
      const authority = await groupAuthority(a, device.id, team);
      await caller(a, root).post(`/v1/admin/authorities/${authority}/deactivate`, {}).expect(200);
      const res = await caller(a, operator).post(`/v1/admin/authorities/${authority}/activate`, {});
      expect(res.status).toBeLessThan(500);
    });

    it('rank: an operator cannot grant to a group authority reaching an admin (nested)', async () => {
      const operator = await actor('operator');
      const device = await createDevice();
      await createAuthority(device.id, operator.user.id, {
        permissions: ['authority_permissions.grant', 'authorities.read'],
      });
      const inner = await group();
      const outer = await group();
      await add(a, inner, [{ user_id: (await createUser({ role: 'admin' })).id }]);
      await add(a, outer, [{ group_id: inner }]);
      const authority = await groupAuthority(a, device.id, outer);
      const res = await caller(a, operator).post('/v1/admin/authority-permissions', {
        authority_id: authority,
        permission_id: permissionId('authorities.read'),
      });
      expect({ status: res.status, code: res.body.error?.code }).toEqual({
        status: 403,
        code: 'ROLE_ESCALATION_FORBIDDEN',
      });
      const bulk = await caller(a, operator)
        .post('/v1/admin/authority-permissions/bulk-grant', {
          items: [{ authority_id: authority, permission_id: permissionId('authorities.read') }],
        })
        .expect(200);
      expect(bulk.body.data.results[0]).toMatchObject({
        status: 'failed',
        error: { code: 'ROLE_ESCALATION_FORBIDDEN' },
      });
      const [row] = await sql<{ count: string }>('SELECT count(*) FROM authority_permissions WHERE authority_id = $1', [
        authority,
      ]);
      expect(Number(row?.count)).toBe(0);
    });

    it('rank: an admin cannot create an authority for a group reaching a super_admin? (recorded: authority alone confers nothing)', async () => {
      const admin = await actor('admin');
      const device = await createDevice();
      const bosses = await group();
      await add(a, bosses, [{ user_id: (await createUser({ role: 'super_admin' })).id }]);
      const res = await caller(a, admin).post('/v1/admin/authorities', { device_id: device.id, group_id: bosses });
      expect(res.status).toBeLessThan(500);
    });

    it('delegation: a granter cannot hand a group authority a permission it does not hold on that device (single, bulk, dry run)', async () => {
      const operator = await actor('operator');
      const device = await createDevice();
      await createAuthority(device.id, operator.user.id, { permissions: ['authority_permissions.grant'] });
      const team = await group();
      await add(a, team, [{ user_id: (await createUser({ role: 'viewer' })).id }]);
      const authority = await groupAuthority(a, device.id, team);
      const body = { authority_id: authority, permission_id: permissionId('authorities.revoke') };
      const single = await caller(a, operator).post('/v1/admin/authority-permissions', body);
      expect({ status: single.status, code: single.body.error?.code }).toEqual({
        status: 403,
        code: 'DELEGATION_FORBIDDEN',
      });
      const dry = await caller(a, operator).post('/v1/admin/authority-permissions?dry_run=true', body);
      expect(dry.body.error?.code).toBe('DELEGATION_FORBIDDEN');
      const bulk = await caller(a, operator)
        .post('/v1/admin/authority-permissions/bulk-grant', { items: [body] })
        .expect(200);
      expect(bulk.body.data.results[0].error?.code).toBe('DELEGATION_FORBIDDEN');
    });

    // Skipped until issue 42 item 1 (the delegation cap of part 5) lands; it fails today, for users too.
    it('(issue 42, part 5 delegation cap) delegation: rights held through a group authority can be handed on only as far as held, and capped by the chain’s expiry', async () => {
      // The granter holds authority_permissions.grant and authorities.read through a group whose
      // membership ends in 10 minutes: what it hands to another user's authority ends then too.
      const operator = await actor('operator');
      const device = await createDevice();
      const team = await group();
      const expires = new Date(realNow() + 10 * 60_000);
      await add(a, team, [{ user_id: operator.user.id }], root, { expires_at: expires.toISOString() });
      const authority = await groupAuthority(a, device.id, team);
      await grantAp(a, authority, 'authority_permissions.grant');
      await grantAp(a, authority, 'authorities.read');
      const other = await createAuthority(device.id, (await createUser({ role: 'viewer' })).id);
      const res = await caller(a, operator).post('/v1/admin/authority-permissions', {
        authority_id: other,
        permission_id: permissionId('authorities.read'),
      });
      expect(res.status).toBe(201);
      expect(res.body.data.expires_at).toBe(expires.toISOString());
    });

    // Skipped until issue 42 item 1 (the delegation cap of part 5) lands; it fails today, for users too.
    it('(issue 42, part 5 delegation cap) control (no group): the delegation cap from the actor’s own expiring authority', async () => {
      const operator = await actor('operator');
      const device = await createDevice();
      const expires = new Date(realNow() + 10 * 60_000);
      await createAuthority(device.id, operator.user.id, {
        permissions: ['authority_permissions.grant', 'authorities.read'],
        expiresAt: expires,
      });
      const other = await createAuthority(device.id, (await createUser({ role: 'viewer' })).id);
      const res = await caller(a, operator).post('/v1/admin/authority-permissions', {
        authority_id: other,
        permission_id: permissionId('authorities.read'),
      });
      expect(res.status).toBe(201);
      expect(res.body.data.expires_at).toBe(expires.toISOString());
    });

    it('a group’s authority is never the owner: transfer-owner refuses a group', async () => {
      const device = await createDevice();
      const team = await group();
      await groupAuthority(a, device.id, team);
      const res = await caller(a, root).post(`/v1/admin/devices/${device.id}/transfer-owner`, { new_group_id: team });
      expect(res.status).toBe(400);
      const res2 = await caller(a, root).post(`/v1/admin/devices/${device.id}/transfer-owner`, {
        new_owner_user_id: team,
        group_id: team,
      });
      expect(res2.status).toBe(400);
      const [row] = await sql<{ count: string }>('SELECT count(*) FROM authorities WHERE device_id = $1 AND owner', [
        device.id,
      ]);
      expect(Number(row?.count)).toBe(0);
    });

    it('a group’s authority is never the owner (database): making one owner is refused', async () => {
      const device = await createDevice();
      const team = await group();
      const authority = await groupAuthority(a, device.id, team);
      await expect(sql('UPDATE authorities SET owner = true WHERE id = $1', [authority])).rejects.toThrow();
    });

    it('an access request through a group authority does not land on the group (no other member gains)', async () => {
      const operator = await actor('operator');
      // An owner decides the device's requests: nobody allowed by role (anywhere) is told.
      const device = await createDevice({ ownerId: (await createUser({ role: 'operator' })).id });
      const team = await group();
      const peer = await createUser({ role: 'operator' });
      await add(a, team, [{ user_id: operator.user.id }, { user_id: peer.id }]);
      const authority = await groupAuthority(a, device.id, team);
      await grantAp(a, authority, 'authorities.read');
      const res = await caller(a, operator).post('/v1/admin/access-requests', {
        device_id: device.id,
        permission_id: permissionId('authorities.revoke'),
        reason: 'need it',
        duration_seconds: 600,
      });
      expect(res.status).toBeLessThan(500);
      if (res.status === 201) {
        const approved = await caller(a, root).post(`/v1/admin/access-requests/${res.body.data.id}/approve`, {});
        expect(approved.status).toBeLessThan(500);
        const check = await caller(a, root)
          .get(`/v1/admin/authz/check?user_id=${peer.id}&permission=authorities.revoke&device_id=${device.id}`)
          .expect(200);
        expect(check.body.data.allowed).toBe(false);
      }
    });
  });

  describe('hostile bodies', () => {
    it.each([
      ['both', (d: number, g: number, u: number) => ({ device_id: d, group_id: g, user_id: u }), 400],
      ['neither', (d: number) => ({ device_id: d }), 400],
      ['group_id as string', (d: number, g: number) => ({ device_id: d, group_id: String(g) }), 400],
      ['group_id null alone', (d: number) => ({ device_id: d, group_id: null }), 400],
      [
        'group_id null with user_id',
        (d: number, _g: number, u: number) => ({ device_id: d, group_id: null, user_id: u }),
        201,
      ],
      ['user_id null with group_id', (d: number, g: number) => ({ device_id: d, group_id: g, user_id: null }), 201],
      ['group_id 0', (d: number) => ({ device_id: d, group_id: 0 }), 400],
      ['group_id -1', (d: number) => ({ device_id: d, group_id: -1 }), 400],
      ['group_id 1.5', (d: number) => ({ device_id: d, group_id: 1.5 }), 400],
      ['group_id huge', (d: number) => ({ device_id: d, group_id: 2 ** 63 }), 400],
      ['group_id array', (d: number, g: number) => ({ device_id: d, group_id: [g] }), 400],
      ['group_id object', (d: number, g: number) => ({ device_id: d, group_id: { id: g } }), 400],
      ['group_id missing group', (d: number) => ({ device_id: d, group_id: 9_000_000_000 }), 404],
    ])('POST /authorities with %s: never a 500', async (_name, body, expected) => {
      const device = await createDevice();
      const team = await group();
      const user = await createUser({ role: 'viewer' });
      const res = await caller(a, root).post('/v1/admin/authorities', body(device.id, team, user.id));
      expect(res.status).not.toBe(500);
      // null for the other field: accepting it is a reading of "exactly one is given"; 400 is too.
      if (expected === 201) expect([201, 400]).toContain(res.status);
      else expect(res.status).toBe(expected);
      if (expected === 404) expect(res.body.error.code).toBe('GROUP_NOT_FOUND');
    });

    it('a deleted group: 404 GROUP_NOT_FOUND, and no authority written', async () => {
      const device = await createDevice();
      const team = await group();
      await caller(a, root).delete(`/v1/admin/groups/${team}`).expect(200);
      const res = await caller(a, root).post('/v1/admin/authorities', { device_id: device.id, group_id: team });
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 404, code: 'GROUP_NOT_FOUND' });
      const [row] = await sql<{ count: string }>('SELECT count(*) FROM authorities WHERE group_id = $1', [team]);
      expect(Number(row?.count)).toBe(0);
    });

    it('a missing device with a group: 404 DEVICE_NOT_FOUND', async () => {
      const team = await group();
      const res = await caller(a, root).post('/v1/admin/authorities', { device_id: 9_000_000_000, group_id: team });
      expect(res.body.error?.code).toBe('DEVICE_NOT_FOUND');
    });

    it('?group_id= filter hostile values: 400, never 500', async () => {
      for (const value of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
        const res = await caller(a, root).get(`/v1/admin/authorities?group_id=${value}`);
        // group_id is judged as user_id is (the project's int filters).
        const same = await caller(a, root).get(`/v1/admin/authorities?user_id=${value}`);
        expect({ value, status: res.status }).toEqual({ value, status: same.status });
        expect(res.status).not.toBe(500);
      }
    });

    it('a group authority restored after its group’s deletion, and 409 with a deleted pair names is_deleted', async () => {
      const device = await createDevice();
      const team = await group();
      const authority = await groupAuthority(a, device.id, team);
      await caller(a, root)
        .delete(`/v1/admin/authorities/${authority}`)
        .expect((r) => expect([200, 204]).toContain(r.status));
      const again = await caller(a, root)
        .post('/v1/admin/authorities', { device_id: device.id, group_id: team })
        .expect(409);
      expect(again.body.error.details).toMatchObject({ authority_id: authority, group_id: team, is_deleted: true });
      // A user authority on the same device with the same numeric id as the group is a different pair.
      const res = await caller(a, root).post('/v1/admin/authorities', {
        device_id: device.id,
        user_id: (await createUser()).id,
      });
      expect(res.status).toBe(201);
    });
  });

  describe('list row filtering through a group', () => {
    it('an operator allowed only through a group sees that device’s rows in /authorities, /devices, /authority-permissions, and stops when removed', async () => {
      const s = await setup(a, true, ['authorities.read', 'devices.read', 'authority_permissions.read']);
      const elsewhere = await createDevice();
      const other = await createAuthority(elsewhere.id, (await createUser()).id, { permissions: ['authorities.read'] });
      const auths = await caller(a, s.operator)
        .get(`/v1/admin/authorities?page_size=100&device_id=${s.device}`)
        .expect(200);
      expect(auths.body.data.map((x: { id: number }) => x.id).sort()).toEqual([s.target, s.authority].sort());
      const none = await caller(a, s.operator).get(`/v1/admin/authorities?device_id=${elsewhere.id}`).expect(200);
      expect(none.body.data.map((x: { id: number }) => x.id)).not.toContain(other);
      const devices = await caller(a, s.operator).get(`/v1/admin/devices?page_size=100`).expect(200);
      expect(devices.body.data.map((x: { id: number }) => x.id)).toContain(s.device);
      expect(devices.body.data.map((x: { id: number }) => x.id)).not.toContain(elsewhere.id);
      const aps = await caller(a, s.operator)
        .get(`/v1/admin/authority-permissions?page_size=100&device_id=${s.device}`)
        .expect(200);
      expect(aps.body.data.map((x: { id: number }) => x.id).sort()).toEqual([...s.aps].sort());
      const apsOther = await caller(a, s.operator)
        .get(`/v1/admin/authority-permissions?page_size=100&device_id=${elsewhere.id}`)
        .expect(200);
      expect(apsOther.body.data).toEqual([]);
      await caller(a, root)
        .post(`/v1/admin/groups/${s.outer}/members/remove`, { members: [{ group_id: s.inner }] })
        .expect(200);
      for (const t of [a, b]) {
        const after = await caller(t, s.operator).get(`/v1/admin/authorities?device_id=${s.device}`).expect(200);
        expect(after.body.data).toEqual([]);
        const dev = await caller(t, s.operator).get(`/v1/admin/devices?page_size=100`).expect(200);
        expect(dev.body.data.map((x: { id: number }) => x.id)).not.toContain(s.device);
        const ap = await caller(t, s.operator).get(`/v1/admin/authority-permissions?device_id=${s.device}`).expect(200);
        expect(ap.body.data).toEqual([]);
        await caller(t, s.operator).get(`/v1/admin/devices/${s.device}`).expect(403);
      }
    });
  });

  describe('previews and access events', () => {
    it('dry_run POST /authority-permissions on a group authority lists each member’s gain with group_id and writes nothing', async () => {
      const device = await createDevice();
      const inner = await group();
      const outer = await group();
      const u1 = await actor('operator');
      const u2 = await actor('viewer');
      await add(a, inner, [{ user_id: u1.user.id }]);
      await add(a, outer, [{ group_id: inner }, { user_id: u2.user.id }]);
      const authority = await groupAuthority(a, device.id, outer);
      const [before] = await sql<{ count: string }>(
        `SELECT count(*) FROM events WHERE (data->>'user_id')::bigint = ANY($1::bigint[])`,
        [[u1.user.id, u2.user.id]],
      );
      const [auditBefore] = await sql<{ count: string }>('SELECT count(*) FROM audit_events WHERE actor_id = $1', [
        root.user.id,
      ]);
      const preview = await caller(a, root)
        .post('/v1/admin/authority-permissions?dry_run=true', {
          authority_id: authority,
          permission_id: permissionId('authorities.revoke'),
        })
        .expect(200);
      expect(preview.body.data.dry_run).toBe(true);
      const changes = preview.body.data.access_changes as {
        user_id: number;
        change: string;
        group_id?: number;
        device_id: number;
        permission_code: string;
        decided_by: string;
      }[];
      expect(
        changes
          .filter((x) => x.permission_code === 'authorities.revoke')
          .map((x) => x.user_id)
          .sort(),
      ).toEqual([u1.user.id, u2.user.id].sort());
      // u2 is a viewer: authorities.revoke on the device is new for both.
      for (const x of changes) expect(x).toMatchObject({ change: 'gained', device_id: device.id, group_id: outer });
      const [ap] = await sql<{ count: string }>('SELECT count(*) FROM authority_permissions WHERE authority_id = $1', [
        authority,
      ]);
      expect(Number(ap?.count)).toBe(0);
      const [after] = await sql<{ count: string }>(
        `SELECT count(*) FROM events WHERE (data->>'user_id')::bigint = ANY($1::bigint[])`,
        [[u1.user.id, u2.user.id]],
      );
      expect(after?.count).toBe(before?.count);
      const [audit] = await sql<{ count: string }>('SELECT count(*) FROM audit_events WHERE actor_id = $1', [
        root.user.id,
      ]);
      expect(audit?.count).toBe(auditBefore?.count);
      // The real write: events match the preview.
      const real = await caller(a, root)
        .post('/v1/admin/authority-permissions', {
          authority_id: authority,
          permission_id: permissionId('authorities.revoke'),
        })
        .expect(201);
      const gained = await sql<{
        data: { user_id: number; permission_code: string; group_id: number; device_id: number };
      }>(`SELECT data FROM events WHERE type = 'access.gained' AND (data->>'user_id')::bigint = ANY($1::bigint[])`, [
        [u1.user.id, u2.user.id],
      ]);
      const fromGrant = gained.filter((e) => e.data.permission_code === 'authorities.revoke');
      expect(fromGrant.map((e) => e.data.user_id).sort()).toEqual([u1.user.id, u2.user.id].sort());
      for (const e of fromGrant) expect(e.data).toMatchObject({ group_id: outer, device_id: device.id });
      // Revoking it: access.lost with group_id for both.
      await caller(a, root)
        .delete(`/v1/admin/authority-permissions/${real.body.data.id}`)
        .expect((r) => expect([200, 204]).toContain(r.status));
      const lost = await sql<{ data: { user_id: number; permission_code: string; group_id: number } }>(
        `SELECT data FROM events WHERE type = 'access.lost' AND (data->>'user_id')::bigint = ANY($1::bigint[])`,
        [[u1.user.id, u2.user.id]],
      );
      const fromRevoke = lost.filter((e) => e.data.permission_code === 'authorities.revoke');
      expect(fromRevoke.map((e) => e.data.user_id).sort()).toEqual([u1.user.id, u2.user.id].sort());
      for (const e of fromRevoke) expect(e.data.group_id).toBe(outer);
    });

    it('bulk-grant dry_run on a group authority writes nothing', async () => {
      const device = await createDevice();
      const team = await group();
      await add(a, team, [{ user_id: (await createUser({ role: 'operator' })).id }]);
      const authority = await groupAuthority(a, device.id, team);
      const res = await caller(a, root)
        .post('/v1/admin/authority-permissions/bulk-grant', {
          items: [{ authority_id: authority, permission_id: permissionId('authorities.read') }],
          dry_run: true,
        })
        .expect(200);
      expect(res.body.data.results[0].status).toBe('granted');
      const [ap] = await sql<{ count: string }>('SELECT count(*) FROM authority_permissions WHERE authority_id = $1', [
        authority,
      ]);
      expect(Number(ap?.count)).toBe(0);
    });

    it('revoking / deactivating / deleting a group authority: access.lost with group_id for each member', async () => {
      for (const action of ['revoke', 'deactivate', 'delete'] as const) {
        const s = await setup(a, true);
        if (action === 'delete')
          await caller(a, root)
            .delete(`/v1/admin/authorities/${s.authority}`)
            .expect((r) => expect([200, 204]).toContain(r.status));
        else await caller(a, root).post(`/v1/admin/authorities/${s.authority}/${action}`, {}).expect(200);
        const lost = await sql<{ data: { permission_code: string; group_id: number; device_id: number } }>(
          `SELECT data FROM events WHERE type = 'access.lost' AND (data->>'user_id')::bigint = $1`,
          [s.operator.user.id],
        );
        expect({ action, lost: lost.map((e) => e.data) }).toEqual({
          action,
          lost: [
            expect.objectContaining({ permission_code: 'authorities.read', group_id: s.outer, device_id: s.device }),
          ],
        });
      }
    });

    it('removing a member from a nested group: access.lost for the device right with group_id', async () => {
      const s = await setup(a, true);
      await caller(a, root)
        .post(`/v1/admin/groups/${s.outer}/members/remove`, { members: [{ group_id: s.inner }] })
        .expect(200);
      const lost = await sql<{ data: { permission_code: string; group_id: number; device_id: number } }>(
        `SELECT data FROM events WHERE type = 'access.lost' AND (data->>'user_id')::bigint = $1`,
        [s.operator.user.id],
      );
      expect(lost.map((e) => e.data)).toContainEqual(
        expect.objectContaining({ permission_code: 'authorities.read', device_id: s.device, group_id: s.outer }),
      );
    });

    it('authz/check explain for a user with own authority and group authority lists both paths, own first', async () => {
      const s = await setup(a, true);
      const own = await caller(a, root)
        .post('/v1/admin/authorities', { device_id: s.device, user_id: s.operator.user.id })
        .expect(201);
      await grantAp(a, own.body.data.id, 'authorities.read');
      const check = await caller(a, root)
        .get(
          `/v1/admin/authz/check?user_id=${s.operator.user.id}&permission=authorities.read&device_id=${s.device}&explain=true`,
        )
        .expect(200);
      expect(check.body.data.decided_by).toBe('authority_permission');
      expect(check.body.data.paths.map((p: { decided_by: string }) => p.decided_by)).toEqual([
        'authority_permission',
        'group_authority_permission',
      ]);
    });
  });
});
