import { randomUUID } from 'node:crypto';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';

/* Adversarial review of 361e7bc: the access questions of part 6.13 through groups. */

const REVOKE = 'authorities.revoke';
const NOT_ROLE = 'permission_grant,group_permission_grant,device_owner,authority_permission,group_authority_permission';

interface Path {
  decided_by: string;
  authority_id: number | null;
  grant_id: number | null;
  group_id: number | null;
  via: number[];
}
interface Row {
  user_id: number;
  allowed_by: Path[];
}

const key = (path: Path): string =>
  [path.decided_by, path.authority_id, path.grant_id, path.group_id, (path.via ?? []).join('>')].join('|');
const keys = (paths: readonly Path[]): string[] => paths.map(key).sort();

describe('attacks: the access questions through groups (361e7bc)', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const get = (path: string) => caller(t, root).get(path);

  async function group(body: Record<string, unknown> = {}): Promise<number> {
    const created = await caller(t, root)
      .post('/v1/admin/groups', { name: `atk ${randomUUID().slice(0, 10)}`, ...body })
      .expect(201);
    return created.body.data.id as number;
  }
  async function add(groupId: number, members: object[], extra: object = {}): Promise<void> {
    const res = await caller(t, root).post(`/v1/admin/groups/${groupId}/members`, { members, ...extra });
    expect(res.status).toBe(200);
    for (const item of res.body.data.results ?? []) expect(item.status).toBe('added');
  }
  async function remove(groupId: number, members: object[]): Promise<void> {
    const res = await caller(t, root).post(`/v1/admin/groups/${groupId}/members/remove`, { members });
    expect(res.status).toBe(200);
    for (const item of res.body.data.results ?? []) expect(item.status).toBe('removed');
  }
  async function groupAuthority(
    deviceId: number,
    groupId: number,
    codes: string[],
  ): Promise<{ id: number; perms: number[] }> {
    const created = await caller(t, root)
      .post('/v1/admin/authorities', { device_id: deviceId, group_id: groupId })
      .expect(201);
    const perms: number[] = [];
    for (const code of codes) {
      const ap = await caller(t, root)
        .post('/v1/admin/authority-permissions', {
          authority_id: created.body.data.id,
          permission_id: permissionId(code),
        })
        .expect(201);
      perms.push(ap.body.data.id as number);
    }
    return { id: created.body.data.id as number, perms };
  }
  /** A DB-clock moment strictly between the previous write and the next (a few ms either side). */
  async function moment(): Promise<string> {
    await sql('SELECT pg_sleep(0.004)');
    const [row] = await sql<{ now: Date }>('SELECT clock_timestamp() AS now');
    await sql('SELECT pg_sleep(0.004)');
    return (row?.now ?? new Date()).toISOString();
  }

  /** Every listed row among `ours` (newest users first, stopping below the smallest of ours). */
  async function listed(
    deviceId: number,
    permission: string,
    ours: readonly number[],
    opts: { via?: string; at?: string } = {},
  ): Promise<Map<number, Row>> {
    const min = Math.min(...ours);
    const found = new Map<number, Row>();
    for (let page = 1; page < 500; page += 1) {
      const q = new URLSearchParams({ permission, page_size: '100', page: String(page), sort: 'user_id:desc' });
      if (opts.via) q.set('via', opts.via);
      if (opts.at) q.set('at', opts.at);
      const res = await get(`/v1/admin/devices/${deviceId}/access?${q.toString()}`);
      expect(res.status).toBe(200);
      const rows = res.body.data as Row[];
      for (const row of rows) if (ours.includes(row.user_id)) found.set(row.user_id, row);
      if (rows.length < 100 || (rows.at(-1)?.user_id ?? 0) < min) break;
    }
    return found;
  }
  async function check(userId: number, permission: string, deviceId: number, at?: string) {
    const res = await get(
      `/v1/admin/authz/check?user_id=${userId}&permission=${permission}&device_id=${deviceId}&explain=true${at ? `&at=${encodeURIComponent(at)}` : ''}`,
    );
    expect(res.status).toBe(200);
    return res.body.data as { allowed: boolean; decided_by: string | null; group_id: number | null; paths: Path[] };
  }
  /** The list and the check agree for every user of ours; returns the listed ids. */
  async function sweep(deviceId: number, permission: string, ours: readonly number[], at?: string): Promise<number[]> {
    const rows = await listed(deviceId, permission, ours, { via: NOT_ROLE, at });
    for (const userId of ours) {
      const answer = await check(userId, permission, deviceId, at);
      const nonRole = answer.paths.filter((path) => path.decided_by !== 'role');
      expect({ userId, at, listed: rows.has(userId) }).toEqual({ userId, at, listed: nonRole.length > 0 });
      if (rows.has(userId))
        expect({ userId, at, paths: keys(rows.get(userId)!.allowed_by) }).toEqual({
          userId,
          at,
          paths: keys(answer.paths),
        });
    }
    return [...rows.keys()].sort((a, b) => a - b);
  }

  it('list ⇔ check for every member, through each change (membership, nesting, group grant, delete, restore, authority permission), live and at= each moment', async () => {
    const device = (await createDevice()).id;
    const [G, inner, Gop, Gg] = [await group(), await group(), await group({ role_id: 3 }), await group()];
    const u1 = (await createUser({ role: 'operator' })).id;
    const u2 = (await createUser({ role: 'operator' })).id;
    const u3 = (await createUser({ role: 'member' })).id;
    const u4 = (await createUser({ role: 'operator' })).id;
    const u5 = (await createUser({ role: 'operator', status: 'suspended' })).id;
    const u6 = (await createUser({ role: 'member' })).id;
    const u7 = (await createUser({ role: 'operator' })).id;
    const u8 = (await createUser({ role: 'operator' })).id;
    const u9 = (await createUser({ role: 'operator' })).id;
    const ours = [u1, u2, u3, u4, u5, u6, u7, u8, u9];
    await add(inner, [{ user_id: u2 }]);
    await add(G, [
      { user_id: u1 },
      { group_id: inner },
      { user_id: u3 },
      { user_id: u4 },
      { user_id: u5 },
      { user_id: u6 },
    ]);
    await add(Gop, [{ user_id: u3 }]);
    await add(Gg, [{ user_id: u7 }, { user_id: u8 }]);
    await createAuthority(device, u4, { permissions: [REVOKE] });
    const team = await groupAuthority(device, G, [REVOKE]);
    await caller(t, root)
      .post('/v1/admin/permission-grants/grant', { group_id: Gg, permission_id: permissionId(REVOKE) })
      .expect(201);
    await caller(t, root)
      .post('/v1/admin/permission-grants/grant', { user_id: u8, permission_id: permissionId(REVOKE) })
      .expect(201);

    const expected: { at: string; users: number[] }[] = [];
    const step = async (users: number[]): Promise<void> => {
      expect(await sweep(device, REVOKE, ours)).toEqual([...users].sort((a, b) => a - b));
      // Again (now from the cache): the same.
      expect(await sweep(device, REVOKE, ours)).toEqual([...users].sort((a, b) => a - b));
      expected.push({ at: await moment(), users: [...users].sort((a, b) => a - b) });
    };
    await step([u1, u2, u3, u4, u7, u8]);

    // via= with the group ways.
    const ga = await listed(device, REVOKE, ours, { via: 'group_authority_permission' });
    expect([...ga.keys()].sort((a, b) => a - b)).toEqual([u1, u2, u3, u4].sort((a, b) => a - b));
    const own = await listed(device, REVOKE, ours, { via: 'authority_permission' });
    expect([...own.keys()]).toEqual([u4]);
    const gg = await listed(device, REVOKE, ours, { via: 'group_permission_grant' });
    expect([...gg.keys()].sort((a, b) => a - b)).toEqual([u7, u8].sort((a, b) => a - b));
    const pg = await listed(device, REVOKE, ours, { via: 'permission_grant' });
    expect([...pg.keys()]).toEqual([u8]);
    expect(
      gg
        .get(u8)!
        .allowed_by.map((p) => p.decided_by)
        .sort(),
    ).toEqual(['group_permission_grant', 'permission_grant']);

    // Paging, page_size=1, over the device-only ways (only our rows): one row a page, each once, total exact.
    const seen: number[] = [];
    let total = -1;
    for (let page = 1; page <= 5; page += 1) {
      const res = await get(
        `/v1/admin/devices/${device}/access?permission=${REVOKE}&via=authority_permission,group_authority_permission&page_size=1&page=${page}&count=exact`,
      ).expect(200);
      total = res.body.meta.total;
      for (const row of res.body.data as Row[]) seen.push(row.user_id);
      expect(res.body.data.length).toBe(page <= 4 ? 1 : 0);
    }
    expect(total).toBe(4);
    expect([...seen].sort((a, b) => a - b)).toEqual([u1, u2, u3, u4].sort((a, b) => a - b));

    await remove(G, [{ user_id: u1 }]);
    await step([u2, u3, u4, u7, u8]);
    await remove(G, [{ group_id: inner }]);
    await step([u3, u4, u7, u8]);
    await caller(t, root)
      .post('/v1/admin/permission-grants/revoke', { group_id: Gg, permission_id: permissionId(REVOKE) })
      .expect(200);
    await step([u3, u4, u8]);
    await caller(t, root).delete(`/v1/admin/groups/${G}`).expect(200);
    await step([u4, u8]);
    await caller(t, root).post(`/v1/admin/groups/${G}/restore`).expect(200);
    await step([u3, u4, u8]);
    await caller(t, root).delete(`/v1/admin/authority-permissions/${team.perms[0]}`).expect(200);
    await step([u4, u8]);

    // As of each moment: the list and the check agree, and answer what was live then.
    for (const { at, users } of expected)
      expect({ at, users: await sweep(device, REVOKE, ours, at) }).toEqual({ at, users });
  });

  it('/users/{id}/access: an own and a group authority on one device give one row, with the same ways as /devices/{id}/access lists', async () => {
    const [d1, d2, d3] = [(await createDevice()).id, (await createDevice()).id, (await createDevice()).id];
    const user = (await createUser({ role: 'operator' })).id;
    const [A, B] = [await group(), await group()];
    await add(A, [{ user_id: user }]);
    await add(B, [{ user_id: user }]);
    // d1: own (holding) + group A; d2: own (not holding) + groups A and B; d3: group B only.
    await createAuthority(d1, user, { permissions: [REVOKE] });
    await groupAuthority(d1, A, [REVOKE]);
    await createAuthority(d2, user, { permissions: ['authorities.read'] });
    await groupAuthority(d2, A, [REVOKE]);
    await groupAuthority(d2, B, [REVOKE]);
    await groupAuthority(d3, B, [REVOKE]);
    const res = await get(`/v1/admin/users/${user}/access?permission=${REVOKE}&count=exact`).expect(200);
    const rows = res.body.data as { device_id: number; allowed_by: Path[] }[];
    expect(rows.map((row) => row.device_id)).toEqual([d1, d2, d3]);
    expect(res.body.meta.total).toBe(3);
    // page_size=1 pages through the same three devices.
    const paged: number[] = [];
    for (let page = 1; page <= 3; page += 1) {
      const one = await get(`/v1/admin/users/${user}/access?permission=${REVOKE}&page_size=1&page=${page}`).expect(200);
      paged.push(...one.body.data.map((row: { device_id: number }) => row.device_id));
    }
    expect(paged).toEqual([d1, d2, d3]);
    // as of now, asked: the same devices
    const asked = await get(
      `/v1/admin/users/${user}/access?permission=${REVOKE}&at=${encodeURIComponent(await moment())}`,
    ).expect(200);
    expect(asked.body.data.map((row: { device_id: number }) => row.device_id)).toEqual([d1, d2, d3]);
    // Each row's ways are every way the evaluator finds (the device question's and the check's).
    const mismatches: object[] = [];
    for (const row of rows) {
      const answer = await check(user, REVOKE, row.device_id);
      const byDevice = await listed(row.device_id, REVOKE, [user], { via: NOT_ROLE });
      const [c, dv, us] = [keys(answer.paths), keys(byDevice.get(user)!.allowed_by), keys(row.allowed_by)];
      if (JSON.stringify(c) !== JSON.stringify(dv) || JSON.stringify(c) !== JSON.stringify(us))
        mismatches.push({ device: row.device_id, check: c, deviceQuestion: dv, userQuestion: us });
    }
    expect(mismatches).toEqual([]);
  });

  it('a group role: own role member + group admin → listed by role with group_id; role taken → gone at once; at= before still lists; group operator role gives no device read', async () => {
    const device = (await createDevice()).id;
    const admins = await group({ role_id: 2 });
    const ops = await group({ role_id: 3 });
    const m = (await createUser({ role: 'member' })).id;
    const o = (await createUser({ role: 'member' })).id;
    await add(admins, [{ user_id: m }]);
    await add(ops, [{ user_id: o }]);
    const before = await listed(device, 'devices.read', [m, o], { via: 'role' });
    expect(before.get(m)?.allowed_by[0]).toMatchObject({ decided_by: 'role', group_id: admins });
    expect(before.has(o)).toBe(false);
    expect((await check(o, 'devices.read', device)).allowed).toBe(false);
    const then = await moment();
    await caller(t, root).patch(`/v1/admin/groups/${admins}`, { role_id: null }).expect(200);
    const after = await listed(device, 'devices.read', [m, o], { via: 'role' });
    expect(after.has(m)).toBe(false);
    expect((await check(m, 'devices.read', device)).allowed).toBe(false);
    const past = await listed(device, 'devices.read', [m, o], { via: 'role', at: then });
    expect(past.get(m)?.allowed_by[0]).toMatchObject({ decided_by: 'role', group_id: admins });
    expect((await check(m, 'devices.read', device, then)).allowed).toBe(true);
    // The group given the role back by PATCH: listed again at once.
    await caller(t, root).patch(`/v1/admin/groups/${admins}`, { role_id: 2 }).expect(200);
    expect((await listed(device, 'devices.read', [m], { via: 'role' })).has(m)).toBe(true);
  });

  it('a member with own role member, reached only through a group that gives operator and a group authority: listed; the user question lists the device', async () => {
    const device = (await createDevice()).id;
    const ops = await group({ role_id: 3 });
    const u = (await createUser({ role: 'member' })).id;
    await add(ops, [{ user_id: u }]);
    await groupAuthority(device, ops, ['authorities.read']);
    const rows = await listed(device, 'authorities.read', [u], { via: NOT_ROLE });
    expect(rows.get(u)?.allowed_by).toEqual([
      expect.objectContaining({ decided_by: 'group_authority_permission', group_id: ops }),
    ]);
    const where = await get(`/v1/admin/users/${u}/access?permission=authorities.read`).expect(200);
    expect(where.body.data.map((row: { device_id: number }) => row.device_id)).toEqual([device]);
    expect(where.body.meta.scope).toBe('devices');
  });

  it('expiries through groups end the listed access at their instant (a cached page included): a user membership, a nested membership, a group grant', async () => {
    const device = (await createDevice()).id;
    const [G, nested, Gg] = [await group(), await group(), await group()];
    const a = (await createUser({ role: 'operator' })).id;
    const b = (await createUser({ role: 'operator' })).id;
    const c = (await createUser({ role: 'operator' })).id;
    const keep = (await createUser({ role: 'operator' })).id;
    await groupAuthority(device, G, [REVOKE]);
    const [clock] = await sql<{ now: Date }>('SELECT clock_timestamp() AS now');
    const instant = new Date((clock?.now ?? new Date()).getTime() + 2000);
    await add(G, [{ user_id: a }], { expires_at: instant.toISOString() });
    await add(nested, [{ user_id: b }]);
    await add(G, [{ group_id: nested }], { expires_at: instant.toISOString() });
    await add(G, [{ user_id: keep }]);
    await add(Gg, [{ user_id: c }]);
    await caller(t, root)
      .post('/v1/admin/permission-grants/grant', {
        group_id: Gg,
        permission_id: permissionId(REVOKE),
        expires_at: instant.toISOString(),
      })
      .expect(201);
    const ours = [a, b, c, keep];
    expect(await sweep(device, REVOKE, ours)).toEqual([a, b, c, keep].sort((x, y) => x - y));
    await sql('SELECT pg_sleep(greatest(0, extract(epoch FROM ($1::timestamptz - clock_timestamp()))) + 0.05)', [
      instant,
    ]);
    expect(await sweep(device, REVOKE, ours)).toEqual([keep]);
    const where = await get(`/v1/admin/users/${a}/access?permission=${REVOKE}`).expect(200);
    expect(where.body.data).toEqual([]);
    // at= just before the instant: all of them.
    const justBefore = new Date(instant.getTime() - 1).toISOString();
    expect(await sweep(device, REVOKE, ours, justBefore)).toEqual([a, b, c, keep].sort((x, y) => x - y));
    expect(await sweep(device, REVOKE, ours, instant.toISOString())).toEqual([keep]);
  });

  it('a user re-added after removal, and a user in two paths to the same group: one row, total exact', async () => {
    const device = (await createDevice()).id;
    const [top, left, right] = [await group(), await group(), await group()];
    const u = (await createUser({ role: 'operator' })).id;
    const v = (await createUser({ role: 'operator' })).id;
    await add(left, [{ user_id: u }]);
    await add(right, [{ user_id: u }]);
    await add(top, [{ group_id: left }, { group_id: right }, { user_id: u }, { user_id: v }]);
    await remove(top, [{ user_id: v }]);
    await add(top, [{ user_id: v }]);
    await groupAuthority(device, top, [REVOKE]);
    const res = await get(
      `/v1/admin/devices/${device}/access?permission=${REVOKE}&via=group_authority_permission&count=exact`,
    ).expect(200);
    expect(res.body.data.map((row: Row) => row.user_id)).toEqual([u, v].sort((x, y) => x - y));
    expect(res.body.meta.total).toBe(2);
    expect(res.body.data[0].allowed_by).toHaveLength(1);
    expect(res.body.data[0].allowed_by[0].via).toEqual([top]);
  });

  it('a group authority deactivated, a member removed, a nested group deleted: both questions fresh at once (cached pages)', async () => {
    const device = (await createDevice()).id;
    const [G, inner] = [await group(), await group()];
    const u = (await createUser({ role: 'operator' })).id;
    const w = (await createUser({ role: 'operator' })).id;
    await add(inner, [{ user_id: w }]);
    await add(G, [{ user_id: u }, { group_id: inner }]);
    const team = await groupAuthority(device, G, [REVOKE]);
    const userQ = async (id: number): Promise<number[]> =>
      (await get(`/v1/admin/users/${id}/access?permission=${REVOKE}`).expect(200)).body.data.map(
        (r: { device_id: number }) => r.device_id,
      );
    expect(await userQ(u)).toEqual([device]);
    expect(await userQ(w)).toEqual([device]);
    expect(await sweep(device, REVOKE, [u, w])).toEqual([u, w].sort((a, b) => a - b));
    await caller(t, root).delete(`/v1/admin/groups/${inner}`).expect(200);
    expect(await userQ(w)).toEqual([]);
    expect(await sweep(device, REVOKE, [u, w])).toEqual([u]);
    await caller(t, root).post(`/v1/admin/groups/${inner}/restore`).expect(200);
    expect(await userQ(w)).toEqual([device]);
    await caller(t, root).post(`/v1/admin/authorities/${team.id}/deactivate`, {}).expect(200);
    expect(await userQ(u)).toEqual([]);
    expect(await sweep(device, REVOKE, [u, w])).toEqual([]);
    await caller(t, root).post(`/v1/admin/authorities/${team.id}/activate`, {}).expect(200);
    expect(await userQ(u)).toEqual([device]);
    await remove(G, [{ user_id: u }]);
    expect(await userQ(u)).toEqual([]);
    expect(await sweep(device, REVOKE, [u, w])).toEqual([w]);
  });

  it('performance: 200 groups nested three deep, 500 members, one group authority at the top → 200 within seconds, total 500', async () => {
    const device = (await createDevice()).id;
    const tag = randomUUID().slice(0, 8);
    const users = await sql<{ id: number }>(
      `INSERT INTO users (email, display_name, role_id, status_id)
       SELECT 'perf-' || $1 || '-' || i || '@example.com', 'perf', 3, 2 FROM generate_series(1, 500) i RETURNING id`,
      [tag],
    );
    const ids = users.map((row) => Number(row.id));
    const top = await group();
    const mids: number[] = [];
    for (let i = 0; i < 9; i += 1) mids.push(await group());
    await add(
      top,
      mids.map((id) => ({ group_id: id })),
    );
    // The 190 leaves and their 500 users are written in two statements (the read is what is
    // measured here; 200 requests of setup took minutes on a loaded machine): leaf l holds the
    // users i with i % 190 = l or i % 97 = l, and sits under mid l % 9.
    const leafRows = await sql<{ id: string }>(
      `INSERT INTO groups (name) SELECT 'perf leaf ' || $1 || ' ' || l FROM generate_series(0, 189) l
       ORDER BY l RETURNING id`,
      [tag],
    );
    const leaves = leafRows.map((row) => Number(row.id)).sort((a, b) => a - b);
    await sql(
      `INSERT INTO group_memberships (group_id, member_group_id, added_by)
       SELECT ($1::bigint[])[l % 9 + 1], ($2::bigint[])[l + 1], $3 FROM generate_series(0, 189) l`,
      [mids, leaves, root.user.id],
    );
    await sql(
      `INSERT INTO group_memberships (group_id, user_id, added_by)
       SELECT ($1::bigint[])[l + 1], ($2::bigint[])[i + 1], $3
       FROM generate_series(0, 189) l CROSS JOIN generate_series(0, 499) i WHERE i % 190 = l OR i % 97 = l`,
      [leaves, ids, root.user.id],
    );
    await groupAuthority(device, top, [REVOKE]);
    const res = await get(
      `/v1/admin/devices/${device}/access?permission=${REVOKE}&via=group_authority_permission&page_size=100&count=exact`,
    );
    expect(res.status).toBe(200);
    expect(res.body.meta.total).toBe(500);
    expect(res.body.data).toHaveLength(100);
    const at = await moment();
    const past = await get(
      `/v1/admin/devices/${device}/access?permission=${REVOKE}&page_size=100&page=5&at=${encodeURIComponent(at)}`,
    );
    expect(past.status).toBe(200);
    const mine = await get(`/v1/admin/users/${ids[123]}/access?permission=${REVOKE}`);
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((row: { device_id: number }) => row.device_id)).toEqual([device]);
  }, 180_000);
});
