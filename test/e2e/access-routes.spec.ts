import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadSettings } from '../../src/platform/config/settings.js';
import { migrate } from '../../src/platform/database/migrate.js';
import { actor, createUser, permissionId, signToken, type Caller, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql, sqlOn } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { createOwnDatabase } from '../support/own-database.js';
import { caller } from '../support/requests.js';
import { testCachePrefix, testDatabaseUrl } from '../support/test-env.js';

interface TimelineEntry {
  occurred_at: string;
  user_id: number;
  change: 'gained' | 'lost';
  cause: string;
  permission_code: string;
  actor_id: number | null;
  event_id: string | null;
}

const REVOKE = 'authorities.revoke';

describe('access questions: errors, timeline, cache and history (part 6.13)', () => {
  let t: TestApp;
  let root: Caller;
  let device: number;
  let holder: TestUser;

  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
    root = await actor('super_admin');
    holder = await createUser({ role: 'operator' });
    device = (await createDevice()).id;
    await createAuthority(device, holder.id, { permissions: [REVOKE] });
  });
  afterAll(() => t.close());

  const get = (path: string) => caller(t, root).get(path);

  it.each([
    ['an unknown device', () => `/v1/admin/devices/999999999/access?permission=${REVOKE}`, 404, 'DEVICE_NOT_FOUND'],
    ['an unknown user', () => `/v1/admin/users/999999999/access?permission=${REVOKE}`, 404, 'USER_NOT_FOUND'],
    [
      'an unknown permission',
      () => `/v1/admin/devices/${device}/access?permission=doors.open`,
      404,
      'PERMISSION_NOT_FOUND',
    ],
    [
      'a permission that is not device-scoped',
      () => `/v1/admin/users/${holder.id}/access?permission=users.read`,
      422,
      'PERMISSION_NOT_DEVICE_SCOPED',
    ],
    ['no permission', () => `/v1/admin/devices/${device}/access`, 400, 'VALIDATION_FAILED'],
    ['an empty permission', () => `/v1/admin/users/${holder.id}/access?permission=`, 400, 'VALIDATION_FAILED'],
    [
      'a future moment',
      () => `/v1/admin/devices/${device}/access?permission=${REVOKE}&at=2999-01-01T00:00:00Z`,
      400,
      'VALIDATION_FAILED',
    ],
    [
      'a moment without offset',
      () => `/v1/admin/devices/${device}/access?permission=${REVOKE}&at=2026-11-01T10:00:00`,
      400,
      'VALIDATION_FAILED',
    ],
    [
      'a moment that is not one',
      () => `/v1/admin/authz/check?user_id=${holder.id}&permission=${REVOKE}&at=yesterday`,
      400,
      'VALIDATION_FAILED',
    ],
    [
      'a moment before the history',
      () => `/v1/admin/authz/check?user_id=${holder.id}&permission=${REVOKE}&at=2001-01-01T00:00:00%2B02:00`,
      422,
      'HISTORY_NOT_AVAILABLE',
    ],
    [
      'an unknown way',
      () => `/v1/admin/devices/${device}/access?permission=${REVOKE}&via=role,magic`,
      400,
      'VALIDATION_FAILED',
    ],
    [
      'a foreign sort',
      () => `/v1/admin/devices/${device}/access?permission=${REVOKE}&sort=device_id:asc`,
      400,
      'VALIDATION_FAILED',
    ],
    [
      'page_size 101',
      () => `/v1/admin/users/${holder.id}/access?permission=${REVOKE}&page_size=101`,
      400,
      'VALIDATION_FAILED',
    ],
    ['page 0', () => `/v1/admin/devices/${device}/access-timeline?page=0`, 400, 'VALIDATION_FAILED'],
    ['an unknown parameter', () => `/v1/admin/devices/${device}/access-timeline?q=x`, 400, 'VALIDATION_FAILED'],
    ['a padded id', () => `/v1/admin/devices/0${device}/access?permission=${REVOKE}`, 400, 'VALIDATION_FAILED'],
    [
      'explain=yes',
      () => `/v1/admin/authz/check?user_id=${holder.id}&permission=${REVOKE}&explain=yes`,
      400,
      'VALIDATION_FAILED',
    ],
  ])('%s is a %i %s', async (_label, path, status, code) => {
    const response = await get(path()).expect(status);
    expect(response.body).toMatchObject({ success: false, error: { code, details: expect.any(Object) } });
    if (code === 'HISTORY_NOT_AVAILABLE')
      expect(response.body.error.details).toEqual({
        at: '2000-12-31T22:00:00.000Z',
        history_starts_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
  });

  it.each(['role', 'permission_grant', 'device_owner', 'authority_permission', 'role,permission_grant'])(
    'via=%s answers 200 with only users allowed that way',
    async (via) => {
      const response = await get(
        `/v1/admin/devices/${device}/access?permission=${REVOKE}&via=${via}&page_size=100`,
      ).expect(200);
      const ways = new Set(via.split(','));
      for (const row of response.body.data as { allowed_by: { decided_by: string }[] }[])
        expect(row.allowed_by.some((path) => ways.has(path.decided_by))).toBe(true);
      const holderListed = (response.body.data as { user_id: number }[]).some((row) => row.user_id === holder.id);
      expect(holderListed).toBe(ways.has('authority_permission'));
    },
  );

  it('a moment as the timeline shows it includes the change shown at that moment', async () => {
    const door = (await createDevice()).id;
    const user = await createUser({ role: 'operator' });
    const authority = await caller(t, root)
      .post('/v1/admin/authorities', { device_id: door, user_id: user.id })
      .expect(201);
    await caller(t, root)
      .post('/v1/admin/authority-permissions', {
        authority_id: authority.body.data.id,
        permission_id: permissionId(REVOKE),
      })
      .expect(201);
    const timeline = await get(
      `/v1/admin/devices/${door}/access-timeline?user_id=${user.id}&permission=${REVOKE}`,
    ).expect(200);
    expect(timeline.body.data[0]).toMatchObject({ change: 'gained', cause: 'permission_granted' });
    const shown = timeline.body.data[0].occurred_at as string;
    const check = await get(
      `/v1/admin/authz/check?user_id=${user.id}&permission=${REVOKE}&device_id=${door}&at=${encodeURIComponent(shown)}`,
    ).expect(200);
    expect(check.body.data).toMatchObject({ allowed: true, decided_by: 'authority_permission' });
    const before = new Date(Date.parse(shown) - 1).toISOString();
    const earlier = await get(
      `/v1/admin/authz/check?user_id=${user.id}&permission=${REVOKE}&device_id=${door}&at=${encodeURIComponent(before)}`,
    ).expect(200);
    expect(earlier.body.data.allowed).toBe(false);
  });

  it('a write that waited for a lock counts from its commit, as the guard saw it', async () => {
    const door = (await createDevice()).id;
    const user = await actor('operator');
    const authority = await createAuthority(door, user.user.id, { permissions: ['devices.read'] });
    // Another session holds the authority row; the revoke waits for it.
    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM authorities WHERE id = $1 FOR UPDATE', [authority]);
      const revoking = caller(t, root)
        .post(`/v1/admin/authorities/${authority}/revoke`)
        .then((response) => response);
      await sleep(300);
      const during = new Date().toISOString();
      await caller(t, user).get(`/v1/admin/devices/${door}`).expect(200); // the guard still allows it
      await sleep(20);
      await holder.query('COMMIT');
      expect((await revoking).status).toBe(200);
      await caller(t, user).get(`/v1/admin/devices/${door}`).expect(403);
      const then = await get(
        `/v1/admin/authz/check?user_id=${user.user.id}&permission=devices.read&device_id=${door}&at=${encodeURIComponent(during)}`,
      ).expect(200);
      expect(then.body.data).toMatchObject({ allowed: true, decided_by: 'authority_permission' });
    } finally {
      await holder.end();
    }
  });

  it('a revoke and a change to its authority at once leave the rights history right', async () => {
    const door = (await createDevice()).id;
    const user = await createUser({ role: 'operator' });
    const authority = await createAuthority(door, user.id, { permissions: [REVOKE], isActive: false });
    const [row] = await sql<{ id: number }>('SELECT id FROM authority_permissions WHERE authority_id = $1', [
      authority,
    ]);
    // Both wait on the device's projection version, held here, then go in either order.
    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        "INSERT INTO projection_versions (scope, id, version) VALUES ('device', $1, 2) ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version + 1",
        [door],
      );
      const revoke = caller(t, root)
        .delete(`/v1/admin/authority-permissions/${row?.id}`)
        .then((response) => response);
      const activate = caller(t, root)
        .post(`/v1/admin/authorities/${authority}/activate`)
        .then((response) => response);
      await sleep(300);
      await holder.query('COMMIT');
      expect([(await revoke).status, (await activate).status]).toEqual([200, 200]);
    } finally {
      await holder.end();
    }
    const where = await get(`/v1/admin/users/${user.id}/access?permission=${REVOKE}`).expect(200);
    expect(where.body).toMatchObject({ data: [], meta: { total: 0 } });
  });

  it('before a device existed nobody could act on it', async () => {
    const before = new Date().toISOString();
    await sleep(5);
    const door = (await createDevice()).id;
    const then = await get(
      `/v1/admin/devices/${door}/access?permission=devices.read&at=${encodeURIComponent(before)}`,
    ).expect(200);
    expect(then.body).toMatchObject({ data: [], meta: { total: 0 } });
    const check = await get(
      `/v1/admin/authz/check?user_id=${root.user.id}&permission=devices.read&device_id=${door}&at=${encodeURIComponent(before)}`,
    ).expect(200);
    expect(check.body.data.allowed).toBe(false);
  });

  it('an authority deleted by hand in the database is recorded as deleted', async () => {
    const door = (await createDevice()).id;
    const user = await createUser({ role: 'operator' });
    const authority = await createAuthority(door, user.id);
    const [before] = await sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM authority_history WHERE authority_id = $1',
      [authority],
    );
    await sql('DELETE FROM authorities WHERE id = $1', [authority]);
    const [after] = await sql<{ n: number; is_deleted: boolean }>(
      'SELECT count(*)::int AS n, bool_or(is_deleted) AS is_deleted FROM authority_history WHERE authority_id = $1',
      [authority],
    );
    expect(after).toEqual({ n: (before?.n ?? 0) + 1, is_deleted: true });
  });

  it('an expiry in a form the database would not read is a 400 naming it, not a database error', async () => {
    const user = await createUser({ role: 'operator' });
    for (const expires of ['2030-W01-1T10:00Z', '20300101T100000Z', '2030-01-01T10:00:00,5Z']) {
      const response = await caller(t, root)
        .post('/v1/admin/permission-grants/grant', {
          user_id: user.id,
          permission_id: permissionId(REVOKE),
          expires_at: expires,
        })
        .expect(400);
      expect(response.body.error.details.fields).toEqual([expect.objectContaining({ field: 'expires_at' })]);
    }
  });

  it('needs access.read: an operator is refused, a viewer (whose role reads everything) is answered', async () => {
    const operator = await actor('operator');
    // An operator may ask /authz/check about now (permission_grants.read), not about the past.
    await caller(t, operator).get(`/v1/admin/authz/check?user_id=${holder.id}&permission=${REVOKE}`).expect(200);
    const past = await caller(t, operator)
      .get(
        `/v1/admin/authz/check?user_id=${holder.id}&permission=${REVOKE}&at=${encodeURIComponent(new Date().toISOString())}`,
      )
      .expect(403);
    expect(past.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'access.read' } });
    const refused = await caller(t, operator)
      .get(`/v1/admin/devices/${device}/access?permission=${REVOKE}`)
      .expect(403);
    expect(refused.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'access.read' } });
    await caller(t, operator).get(`/v1/admin/users/${holder.id}/access?permission=${REVOKE}`).expect(403);
    await caller(t, operator).get(`/v1/admin/devices/${device}/access-timeline`).expect(403);
    const viewer = await actor('viewer');
    await caller(t, viewer).get(`/v1/admin/devices/${device}/access?permission=${REVOKE}`).expect(200);
  });

  it('pages in user order either way, and via narrows to the ways named', async () => {
    const door = (await createDevice()).id;
    const holders = [
      await createUser({ role: 'operator' }),
      await createUser({ role: 'operator' }),
      await createUser({ role: 'viewer' }),
    ];
    for (const user of holders) await createAuthority(door, user.id, { permissions: [REVOKE] });
    const via = 'via=device_owner,authority_permission';
    const first = await get(`/v1/admin/devices/${door}/access?permission=${REVOKE}&${via}&page_size=2`).expect(200);
    const second = await get(`/v1/admin/devices/${door}/access?permission=${REVOKE}&${via}&page_size=2&page=2`).expect(
      200,
    );
    const ids = holders.map((user) => user.id).sort((a, b) => a - b);
    expect(first.body.meta).toMatchObject({ page: 1, page_size: 2, total: 3, total_exact: true });
    expect([...first.body.data, ...second.body.data].map((row: { user_id: number }) => row.user_id)).toEqual(ids);
    const down = await get(`/v1/admin/devices/${door}/access?permission=${REVOKE}&${via}&sort=user_id:desc`).expect(
      200,
    );
    expect(down.body.data.map((row: { user_id: number }) => row.user_id)).toEqual([...ids].reverse());
    const owners = await get(`/v1/admin/devices/${door}/access?permission=${REVOKE}&via=device_owner`).expect(200);
    expect(owners.body).toMatchObject({ data: [], meta: { total: 0 } });
    const past = await get(`/v1/admin/devices/${door}/access?permission=${REVOKE}&${via}&page=9`).expect(200);
    expect(past.body).toMatchObject({ data: [], meta: { total: 3 } });
  });

  it('lists every reason, and a deleted user is answered about the past only', async () => {
    const door = (await createDevice()).id;
    const owner = await createUser({ role: 'operator' });
    await caller(t, root).post(`/v1/admin/devices/${door}/transfer-owner`, { new_owner_user_id: owner.id }).expect(200);
    const [authority] = await sql<{ id: number }>('SELECT id FROM authorities WHERE device_id = $1', [door]);
    await caller(t, root)
      .post('/v1/admin/authority-permissions', { authority_id: authority?.id, permission_id: permissionId(REVOKE) })
      .expect(201);
    const both = await get(`/v1/admin/users/${owner.id}/access?permission=${REVOKE}`).expect(200);
    expect(both.body.data).toEqual([
      {
        device_id: door,
        allowed_by: [
          {
            decided_by: 'device_owner',
            authority_id: authority?.id,
            grant_id: null,
            expires_at: null,
            group_id: null,
            via: [],
            last_used_at: null,
          },
          {
            decided_by: 'authority_permission',
            authority_id: authority?.id,
            grant_id: null,
            expires_at: null,
            group_id: null,
            via: [],
            last_used_at: null,
          },
        ],
      },
    ]);
    const before = new Date(Date.now() + 2).toISOString();
    await sleep(5);
    const gone = await createUser({ role: 'viewer' });
    await caller(t, root).post('/v1/admin/authorities', { device_id: door, user_id: gone.id }).expect(201);
    const moment = new Date().toISOString();
    await sleep(5);
    await caller(t, root).delete(`/v1/admin/users/${gone.id}`).expect(200);
    await get(`/v1/admin/users/${gone.id}/access?permission=devices.read`).expect(404);
    const then = await get(
      `/v1/admin/users/${gone.id}/access?permission=devices.read&at=${encodeURIComponent(moment)}`,
    ).expect(200);
    expect(then.body).toMatchObject({ data: [], meta: { scope: 'all', at: moment } });
    const check = await get(
      `/v1/admin/authz/check?user_id=${gone.id}&permission=devices.read&device_id=${door}&at=${encodeURIComponent(moment)}&explain=true`,
    ).expect(200);
    expect(check.body.data).toMatchObject({ allowed: true, decided_by: 'role', paths: [{ decided_by: 'role' }] });
    const earlier = await get(
      `/v1/admin/authz/check?user_id=${gone.id}&permission=devices.read&at=${encodeURIComponent(before)}`,
    ).expect(200);
    expect(earlier.body.data).toMatchObject({ allowed: false, decided_by: null });
    const now = await get(
      `/v1/admin/devices/${door}/access?permission=devices.read&via=device_owner,authority_permission,role`,
    ).expect(200);
    expect(now.body.data.some((row: { user_id: number }) => row.user_id === gone.id)).toBe(false);
  });

  it('reads through the cache: a repeated page is a hit, a write makes it fresh', async () => {
    const path = `/v1/admin/devices/${device}/access?permission=${REVOKE}&via=authority_permission`;
    // Other spec files write these tables beside this one (each write makes every page fresh): a
    // repeated read with no write between is a hit, so the pair is tried until one has none.
    let hit = await get(path).expect(200);
    for (let attempt = 0; attempt < 10 && hit.body.meta.cache !== 'hit'; attempt += 1) {
      await get(path).expect(200);
      hit = await get(path).expect(200);
    }
    expect(hit.body.meta.cache).toBe('hit');
    expect(hit.body.data.map((row: { user_id: number }) => row.user_id)).toEqual([holder.id]);
    const [authority] = await sql<{ id: number }>('SELECT id FROM authorities WHERE device_id = $1 AND user_id = $2', [
      device,
      holder.id,
    ]);
    await caller(t, root).post(`/v1/admin/authorities/${authority?.id}/deactivate`).expect(200);
    const after = await get(path).expect(200);
    expect(after.body.meta.cache).toBe('miss');
    expect(after.body.data).toEqual([]);
    await caller(t, root).post(`/v1/admin/authorities/${authority?.id}/activate`).expect(200);
    expect((await get(path).expect(200)).body.data).toHaveLength(1);
  });

  it('the timeline: every gain and loss with its cause, actor and feed event, newest first', async () => {
    const door = (await createDevice()).id;
    const first = await createUser({ role: 'operator' });
    const second = await createUser({ role: 'operator' });
    const helper = await createUser({ role: 'operator' });
    await caller(t, root).post(`/v1/admin/devices/${door}/transfer-owner`, { new_owner_user_id: first.id }).expect(200);
    const created = await caller(t, root)
      .post('/v1/admin/authorities', {
        device_id: door,
        user_id: helper.id,
        expires_at: new Date(Date.now() + 3000).toISOString(),
      })
      .expect(201);
    const granted = await caller(t, root)
      .post('/v1/admin/authority-permissions', {
        authority_id: created.body.data.id,
        permission_id: permissionId(REVOKE),
      })
      .expect(201);
    await caller(t, root).delete(`/v1/admin/authority-permissions/${granted.body.data.id}`).expect(200);
    await caller(t, root)
      .post(`/v1/admin/authority-permissions`, {
        authority_id: created.body.data.id,
        permission_id: permissionId(REVOKE),
      })
      .expect(201);
    await caller(t, root)
      .post(`/v1/admin/devices/${door}/transfer-owner`, {
        new_owner_user_id: second.id,
        keep_previous_owner_access: false,
      })
      .expect(200);
    await caller(t, root).post(`/v1/admin/users/${second.id}/suspend`, {}).expect(200);
    // The helper's authority expires (3 s gives the writes above room on a slow machine).
    const [expiry] = await sql<{ expires_at: Date }>('SELECT expires_at FROM authorities WHERE id = $1', [
      created.body.data.id,
    ]);
    await sleep(Math.max(0, (expiry?.expires_at.getTime() ?? 0) - Date.now() + 200));

    const timeline = await get(`/v1/admin/devices/${door}/access-timeline?page_size=100`).expect(200);
    const entries = timeline.body.data as TimelineEntry[];
    expect(timeline.body.meta).toMatchObject({ total: entries.length, total_exact: true });
    const of = (user: TestUser, code: string): string[] =>
      entries
        .filter((entry) => entry.user_id === user.id && entry.permission_code === code)
        .map((entry) => `${entry.change} ${entry.cause}`);
    expect(of(first, 'devices.transfer_owner')).toEqual(['lost ownership_transferred', 'gained ownership_transferred']);
    expect(of(second, 'devices.transfer_owner')).toEqual(['lost user_status_changed', 'gained ownership_transferred']);
    expect(of(helper, REVOKE)).toEqual([
      'lost expired',
      'gained permission_granted',
      'lost permission_revoked',
      'gained permission_granted',
    ]);
    expect(of(helper, 'devices.read')).toEqual([]);
    const times = entries.map((entry) => entry.occurred_at);
    expect([...times].sort().reverse()).toEqual(times);

    // Each change made through the API names its actor and its event on the feed, of the same resource.
    const expired = entries.find((entry) => entry.cause === 'expired');
    expect(expired).toMatchObject({ actor_id: null, event_id: null });
    // The whole feed of those types: the run's other specs write them too, often more than one page.
    const events = new Map<string, { id: string; type: string; resource_id: unknown }>();
    for (let after = ''; ;) {
      const feed = await get(
        `/v1/admin/events?limit=1000&types=authority.create,authority_permission.grant,authority_permission.revoke,device.transfer_owner,user.suspend&after=${after}`,
      ).expect(200);
      const page = feed.body.data as { id: string; type: string; resource_id: unknown }[];
      for (const event of page) events.set(event.id, event);
      if (page.length < 1000) break;
      after = feed.body.meta.next_after as string;
    }
    for (const entry of entries.filter((row) => row.cause !== 'expired')) {
      expect(entry.actor_id).toBe(root.user.id);
      expect(entry.event_id).not.toBeNull();
    }
    const revoked = entries.find((entry) => entry.cause === 'permission_revoked');
    expect(events.get(revoked?.event_id ?? '')).toMatchObject({
      type: 'authority_permission.revoke',
      resource_id: granted.body.data.id,
    });
    const suspended = entries.find((entry) => entry.cause === 'user_status_changed');
    expect(events.get(suspended?.event_id ?? '')).toMatchObject({ type: 'user.suspend', resource_id: second.id });

    const filtered = await get(
      `/v1/admin/devices/${door}/access-timeline?user_id=${helper.id}&permission=${REVOKE}&sort=occurred_at:asc`,
    ).expect(200);
    expect((filtered.body.data as TimelineEntry[]).map((entry) => `${entry.change} ${entry.cause}`)).toEqual([
      'gained permission_granted',
      'lost permission_revoked',
      'gained permission_granted',
      'lost expired',
    ]);
  });

  it('keeps the history append-only, and the migration starts it from the state it found', async () => {
    for (const table of [
      'user_access_history',
      'authority_history',
      'authority_permission_history',
      'access_history_start',
    ]) {
      const column = table === 'access_history_start' ? 'started_at' : 'valid_from';
      await expect(sql(`UPDATE ${table} SET ${column} = now()`)).rejects.toThrow(/append-only/);
      await expect(sql(`DELETE FROM ${table}`)).rejects.toThrow(/append-only/);
      await expect(sql(`TRUNCATE ${table}`)).rejects.toThrow(/append-only/);
    }
    // A grant's period is the database's clock whatever the statement says.
    const user = await createUser({ role: 'operator' });
    const [grant] = await sql<{ granted_at: Date }>(
      "INSERT INTO permission_grants (user_id, permission_id, granted_at) VALUES ($1, $2, now() - interval '1 year') RETURNING granted_at",
      [user.id, permissionId(REVOKE)],
    );
    expect(Math.abs(Date.now() - (grant?.granted_at.getTime() ?? 0))).toBeLessThan(60_000);

    const own = await createOwnDatabase('access_upgrade', { migrateUpTo: 'EventsData1764979200000' });
    const on = <T>(text: string, params: unknown[] = []): Promise<T[]> => sqlOn<T>(own.url, text, params);
    try {
      const [old] = await on<{ id: number }>(
        "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('old@example.com', 'Old', 3, 2) RETURNING id",
      );
      const [door] = await on<{ id: number }>(
        "INSERT INTO devices (serial_number, name) VALUES ('OLD-1', 'Old door') RETURNING id",
      );
      const [authority] = await on<{ id: number }>(
        'INSERT INTO authorities (device_id, user_id, owner) VALUES ($1, $2, true) RETURNING id',
        [door?.id, old?.id],
      );
      await migrate(loadSettings({ DATABASE_URL: own.url }), own.url);
      const [start] = await on<{ started_at: Date }>('SELECT started_at FROM access_history_start');
      const versions = await on<{ authority_id: number; owner: boolean; valid_from: Date; xid: string }>(
        'SELECT authority_id, owner, valid_from, xid::text FROM authority_history',
      );
      expect(versions).toEqual([
        { authority_id: authority?.id, owner: true, valid_from: start?.started_at, xid: expect.any(String) },
      ]);
      expect(await on('SELECT user_id, role_id, status_id, is_deleted FROM user_access_history')).toEqual([
        { user_id: old?.id, role_id: 3, status_id: 2, is_deleted: false },
      ]);
      // A cache namespace of its own: user ids of this database are other users in the shared one.
      const app = await startApp({
        widgets: false,
        databaseUrl: own.url,
        cachePrefix: testCachePrefix('access-upgrade'),
      });
      try {
        const [admin] = await on<{ id: number }>(
          "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('boss@example.com', 'Boss', 1, 2) RETURNING id",
        );
        const session = await on<{ id: string }>(
          "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
          [admin?.id],
        );
        const auth = `Bearer ${signToken({ sub: String(admin?.id), sid: session[0]?.id })}`;
        const at = start?.started_at.toISOString() ?? '';
        const atStart = await app
          .http()
          .get(
            `/v1/admin/devices/${door?.id}/access?permission=${REVOKE}&via=device_owner&at=${encodeURIComponent(at)}`,
          )
          .set('Authorization', auth)
          .expect(200);
        expect(atStart.body.data).toEqual([
          {
            user_id: old?.id,
            allowed_by: [
              {
                decided_by: 'device_owner',
                authority_id: authority?.id,
                grant_id: null,
                expires_at: null,
                group_id: null,
                via: [],
                last_used_at: null,
              },
            ],
          },
        ]);
        const justBefore = new Date((start?.started_at.getTime() ?? 0) - 1).toISOString();
        const refused = await app
          .http()
          .get(`/v1/admin/devices/${door?.id}/access?permission=${REVOKE}&at=${encodeURIComponent(justBefore)}`)
          .set('Authorization', auth)
          .expect(422);
        expect(refused.body.error.details).toEqual({ at: justBefore, history_starts_at: at });
        const timeline = await app
          .http()
          .get(`/v1/admin/devices/${door?.id}/access-timeline?permission=${REVOKE}`)
          .set('Authorization', auth)
          .expect(200);
        expect(timeline.body.data).toEqual([
          {
            occurred_at: at,
            user_id: old?.id,
            change: 'gained',
            cause: 'history_started',
            permission_code: REVOKE,
            group_id: null,
            actor_id: null,
            event_id: null,
          },
        ]);
      } finally {
        await app.close();
      }
    } finally {
      await own.drop();
    }
  });
});
