import { setTimeout as sleep } from 'node:timers/promises';
import { actor, createUser, permissionId, type Caller, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';

interface Path {
  decided_by: string;
  authority_id: number | null;
  grant_id: number | null;
  expires_at: string | null;
  last_used_at?: string | null;
}
interface DeviceRow {
  user_id: number;
  allowed_by: Path[];
}

const REVOKE = 'authorities.revoke';

describe('access questions (part 6.13)', () => {
  let t: TestApp;
  let root: Caller;
  let device: number;
  let owner: TestUser;
  let holder: TestUser;
  let granted: TestUser;
  let suspended: TestUser;
  let admin: TestUser;
  let holderAuthority: number;
  let ownerAuthority: number;
  let grantId: number;

  /** Every page of a device's access list, only the rows of the given users. */
  async function deviceAccess(query: string, mine: readonly number[]): Promise<DeviceRow[]> {
    const rows: DeviceRow[] = [];
    for (let page = 1; ; page += 1) {
      const response = await caller(t, root)
        .get(`/v1/admin/devices/${device}/access?${query}&page=${page}&page_size=100`)
        .expect(200);
      rows.push(...(response.body.data as DeviceRow[]));
      if (page * 100 >= response.body.meta.total) break;
    }
    return rows.filter((row) => mine.includes(row.user_id));
  }

  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
    owner = await createUser({ role: 'operator' });
    holder = await createUser({ role: 'operator' });
    granted = await createUser({ role: 'operator' });
    suspended = await createUser({ role: 'operator', status: 'suspended' });
    admin = await createUser({ role: 'admin' });
    device = (await createDevice({ ownerId: owner.id })).id;
    holderAuthority = await createAuthority(device, holder.id, { permissions: [REVOKE, 'devices.read'] });
    await createAuthority(device, suspended.id, { permissions: [REVOKE] });
    const [row] = await sql<{ id: number }>('SELECT id FROM authorities WHERE device_id = $1 AND owner', [device]);
    ownerAuthority = Number(row?.id);
    const grant = await caller(t, root)
      .post('/v1/admin/permission-grants/grant', { user_id: granted.id, permission_id: permissionId(REVOKE) })
      .expect(201);
    grantId = grant.body.data.id;
  });
  afterAll(() => t.close());

  it('lists every user allowed on the device with every reason, and /authz/check?explain agrees on each', async () => {
    const mine = [owner.id, holder.id, granted.id, suspended.id, admin.id];
    const rows = await deviceAccess(`permission=${REVOKE}`, mine);
    expect(rows).toEqual(
      [
        {
          user_id: owner.id,
          allowed_by: [
            {
              decided_by: 'device_owner',
              authority_id: ownerAuthority,
              grant_id: null,
              expires_at: null,
              group_id: null,
              via: [],
              last_used_at: null,
            },
          ],
        },
        {
          user_id: holder.id,
          allowed_by: [
            {
              decided_by: 'authority_permission',
              authority_id: holderAuthority,
              grant_id: null,
              expires_at: null,
              group_id: null,
              via: [],
              last_used_at: null,
            },
          ],
        },
        {
          user_id: granted.id,
          allowed_by: [
            {
              decided_by: 'permission_grant',
              authority_id: null,
              grant_id: grantId,
              expires_at: null,
              group_id: null,
              via: [],
              last_used_at: null,
            },
          ],
        },
        {
          user_id: admin.id,
          allowed_by: [
            {
              decided_by: 'role',
              authority_id: null,
              grant_id: null,
              expires_at: null,
              group_id: null,
              via: [],
              last_used_at: null,
            },
          ],
        },
      ].sort((a, b) => a.user_id - b.user_id),
    );
    for (const user of mine) {
      const check = await caller(t, root)
        .get(`/v1/admin/authz/check?user_id=${user}&permission=${REVOKE}&device_id=${device}&explain=true`)
        .expect(200);
      // The same ways; the lists add each one's last use (part 6.16).
      const ways = (rows.find((row) => row.user_id === user)?.allowed_by ?? []).map(
        ({ last_used_at: _lastUse, ...way }) => way,
      );
      expect(check.body.data.paths).toEqual(ways);
      expect(check.body.data.allowed).toBe(rows.some((row) => row.user_id === user));
    }
  });

  it('/authz/check?explain=true says why a denial is one, now and as of a moment; nothing else changes', async () => {
    const member = await createUser({ role: 'member' });
    const suspendedMember = await createUser({ role: 'member', status: 'suspended' });
    const stranger = await createUser({ role: 'operator' });
    const moment = new Date().toISOString();
    const check = async (user: TestUser, extra: string): Promise<Record<string, unknown>> =>
      (
        await caller(t, root)
          .get(`/v1/admin/authz/check?user_id=${user.id}&permission=${REVOKE}&device_id=${device}${extra}`)
          .expect(200)
      ).body.data;
    for (const extra of ['&explain=true', `&explain=true&at=${encodeURIComponent(moment)}`]) {
      const denied = { allowed: false, decided_by: null, authority_id: null, grant_id: null, paths: [] };
      expect(await check(member, extra)).toMatchObject({ ...denied, denied_because: 'role_without_admin_access' });
      expect(await check(suspended, extra)).toMatchObject({ ...denied, denied_because: 'user_not_active' });
      // Layer 1 (the user's status) refuses before layer 2 (its role), as for a request of its own.
      expect(await check(suspendedMember, extra)).toMatchObject({ denied_because: 'user_not_active' });
      expect(await check(stranger, extra)).toMatchObject({ ...denied, denied_because: 'no_path' });
      expect(await check(owner, extra)).not.toHaveProperty('denied_because');
    }
    expect(await check(stranger, '')).not.toHaveProperty('denied_because');
    expect(await check(stranger, '&explain=false')).not.toHaveProperty('denied_because');
  });

  it('answers where a user may act, with meta.scope', async () => {
    const mine = await caller(t, root).get(`/v1/admin/users/${owner.id}/access?permission=${REVOKE}`).expect(200);
    expect(mine.body.data).toEqual([
      {
        device_id: device,
        allowed_by: [
          {
            decided_by: 'device_owner',
            authority_id: ownerAuthority,
            grant_id: null,
            expires_at: null,
            group_id: null,
            via: [],
            last_used_at: null,
          },
        ],
      },
    ]);
    expect(mine.body.meta).toMatchObject({ scope: 'devices', total: 1, total_exact: true, page: 1 });
    const everywhere = await caller(t, root)
      .get(`/v1/admin/users/${granted.id}/access?permission=${REVOKE}`)
      .expect(200);
    expect(everywhere.body).toMatchObject({ data: [], meta: { scope: 'all', total: 0 } });
  });

  it('answers as of a moment', async () => {
    const before = new Date().toISOString();
    await sleep(5);
    await caller(t, root).post(`/v1/admin/authorities/${holderAuthority}/revoke`).expect(200);
    const now = await deviceAccess(`permission=${REVOKE}`, [holder.id]);
    expect(now).toEqual([]);
    const then = await deviceAccess(`permission=${REVOKE}&at=${encodeURIComponent(before)}`, [holder.id]);
    expect(then).toHaveLength(1);
    const check = await caller(t, root)
      .get(
        `/v1/admin/authz/check?user_id=${holder.id}&permission=${REVOKE}&device_id=${device}&at=${encodeURIComponent(before)}`,
      )
      .expect(200);
    expect(check.body.data).toMatchObject({ allowed: true, decided_by: 'authority_permission' });
    const timeline = await caller(t, root)
      .get(`/v1/admin/devices/${device}/access-timeline?user_id=${holder.id}`)
      .expect(200);
    expect(timeline.body.data[0]).toMatchObject({
      user_id: holder.id,
      change: 'lost',
      cause: 'revoked',
      actor_id: root.user.id,
    });
  });

  it('refuses a moment before the history', async () => {
    const response = await caller(t, root)
      .get(`/v1/admin/users/${owner.id}/access?permission=${REVOKE}&at=2000-01-01T00:00:00Z`)
      .expect(422);
    expect(response.body.error).toMatchObject({
      code: 'HISTORY_NOT_AVAILABLE',
      details: { at: '2000-01-01T00:00:00.000Z' },
    });
  });
});
