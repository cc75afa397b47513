import { AuthorityPermissionsService } from '../../src/grants/authority-permissions.service.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { actor, createUser, permissionId, type Caller, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

const READ = 'authorities.read';
const LIST = 'authority_permissions.read';
const REVOKE = 'authorities.revoke';

/** Waits until the database's clock has passed `instant` (one statement, no polling). */
async function untilPast(instant: Date): Promise<void> {
  await sql('SELECT pg_sleep(greatest(0, extract(epoch FROM ($1::timestamptz - clock_timestamp()))) + 0.02)', [
    instant,
  ]);
}

/** The database's present moment. */
async function dbNow(): Promise<Date> {
  const [row] = await sql<{ now: Date }>('SELECT clock_timestamp() AS now');
  if (row === undefined) throw new Error('no clock');
  return row.now;
}

/**
 * Authority permissions with `expires_at` (part 6.15): from the instant, everywhere (the guard on
 * every instance, list rows, `/authz/check` now and `at=`, the access lists, the timeline, bulk
 * and single grants), with no write, job or cache rebuild in between.
 */
describe('expiring authority permissions', () => {
  let a: TestApp;
  let b: TestApp;
  let root: Caller;
  let holder: Caller;
  let owner: TestUser;
  let device: number;
  let authority: number;
  let expiresAt: Date;
  let ids: Record<string, number>;
  let before: Date;

  /** The approval's entry point: grants in a transaction of its own on instance `a`. */
  async function grantExpiring(permission: string, until: Date): Promise<{ id: number; expires_at: unknown }> {
    const grants = a.app.get(AuthorityPermissionsService);
    return a.app.get(UnitOfWork).run((tx) =>
      grants.grantExpiring(tx, {
        authorityId: authority,
        permissionId: permissionId(permission),
        expiresAt: until,
        actorId: root.user.id,
        reason: 'access request 1',
      }),
    );
  }

  const deviceSet = async (): Promise<{ version: number; json: string } | undefined> =>
    (await a.app.get(CacheEntries).get(`authz:device:${device}`)).entry;

  beforeAll(async () => {
    const prefix = testCachePrefix('expiring-ap');
    [a, b] = await Promise.all([
      // No last-use recording: the holder's own requests would put a time of their own on its way.
      startApp({ widgets: false, cachePrefix: prefix, env: { ACCESS_USE_RECORDING: 'false' } }),
      startApp({ widgets: false, cachePrefix: prefix, env: { ACCESS_USE_RECORDING: 'false' } }),
    ]);
    root = await actor('super_admin');
    holder = await actor('operator');
    owner = await createUser({ role: 'operator' });
    device = (await createDevice({ ownerId: owner.id })).id;
    // The authority itself expires much later: a path's expiry is the earlier of the two.
    authority = await createAuthority(device, holder.user.id, { expiresAt: new Date(Date.now() + 3_600_000) });
    // 3 s gives the checks before the instant room on a slow machine; nothing asserts a duration.
    expiresAt = new Date((await dbNow()).getTime() + 3000);
    ids = {};
    for (const code of [READ, LIST, REVOKE]) ids[code] = (await grantExpiring(code, expiresAt)).id;
  });
  afterAll(() => Promise.all([a?.close(), b?.close()]));

  it('is allowed everywhere until the instant, and nothing past it, with no write in between', async () => {
    const expiry = expiresAt.toISOString();
    const path = { decided_by: 'authority_permission', authority_id: authority, grant_id: null, expires_at: expiry };

    // Before: the guard on both instances, which caches the device's set with each expiry in it.
    for (const t of [a, b]) await caller(t, holder).get(`/v1/admin/authorities/${authority}`).expect(200);
    const cachedBefore = await deviceSet();
    expect(JSON.parse(cachedBefore?.json ?? '[]')).toContainEqual(
      expect.objectContaining({
        id: authority,
        authority_permissions: expect.arrayContaining([{ code: READ, expires_at: expiry }]),
      }),
    );
    const rows = await caller(a, holder).get(`/v1/admin/authority-permissions?device_id=${device}`).expect(200);
    expect((rows.body.data as { id: number }[]).map((row) => row.id).sort()).toEqual(Object.values(ids).sort());
    for (let read = 0; read < 2; read += 1) {
      const detail = await caller(a, root).get(`/v1/admin/authority-permissions/${ids[READ]}`).expect(200);
      expect(detail.body.data).toMatchObject({ expires_at: expiry, is_active: true, revoked_at: null });
    }
    const check = `/v1/admin/authz/check?user_id=${holder.user.id}&permission=${READ}&device_id=${device}&explain=true`;
    expect((await caller(a, root).get(check).expect(200)).body.data).toMatchObject({
      allowed: true,
      decided_by: 'authority_permission',
      paths: [path],
    });
    const where = await caller(a, root).get(`/v1/admin/users/${holder.user.id}/access?permission=${READ}`);
    expect(where.body.data).toEqual([
      { device_id: device, allowed_by: [{ ...path, group_id: null, via: [], last_used_at: null }] },
    ]);
    const who = await caller(a, root).get(
      `/v1/admin/devices/${device}/access?permission=${READ}&via=authority_permission`,
    );
    expect(who.body.data).toEqual([
      { user_id: holder.user.id, allowed_by: [{ ...path, group_id: null, via: [], last_used_at: null }] },
    ]);
    // Held unexpired: a manual grant of the same pair is refused, in bulk too.
    const again = await caller(a, root)
      .post('/v1/admin/authority-permissions', { authority_id: authority, permission_id: permissionId(READ) })
      .expect(409);
    expect(again.body.error).toMatchObject({
      code: 'AUTHORITY_PERMISSION_EXISTS',
      details: { authority_permission_id: ids[READ] },
    });
    before = await dbNow();

    await untilPast(expiresAt);

    // The guard refuses on the next request, on both instances, from a device set nobody rebuilt.
    for (const t of [a, b]) {
      const refused = await caller(t, holder).get(`/v1/admin/authorities/${authority}`).expect(403);
      expect(refused.body.error.code).toBe('PERMISSION_DENIED');
    }
    expect(await deviceSet()).toEqual(cachedBefore);
    const after = await dbNow();

    // The row filter: the holder no longer sees the device's rows.
    const hidden = await caller(b, holder).get(`/v1/admin/authority-permissions?device_id=${device}`).expect(200);
    expect(hidden.body.data).toEqual([]);
    // The resource: inactive at once, though its detail entry was cached while active.
    const detail = await caller(a, root).get(`/v1/admin/authority-permissions/${ids[READ]}`).expect(200);
    expect(detail.body.data).toMatchObject({ expires_at: expiry, is_active: false, revoked_at: null });
    const listed = async (active: boolean): Promise<number[]> =>
      (
        (await caller(a, root).get(`/v1/admin/authority-permissions?authority_id=${authority}&is_active=${active}`))
          .body.data as { id: number }[]
      ).map((row) => row.id);
    expect(await listed(true)).toEqual([]);
    expect((await listed(false)).sort()).toEqual(Object.values(ids).sort());

    // The questions: now, as of a moment before, and as of one after.
    const denied = { allowed: false, decided_by: null, paths: [], denied_because: 'no_path' };
    expect((await caller(b, root).get(check).expect(200)).body.data).toMatchObject(denied);
    const at = (moment: Date): string => `&at=${encodeURIComponent(moment.toISOString())}`;
    expect(
      (
        await caller(b, root)
          .get(check + at(before))
          .expect(200)
      ).body.data,
    ).toMatchObject({
      allowed: true,
      paths: [path],
    });
    expect(
      (
        await caller(b, root)
          .get(check + at(after))
          .expect(200)
      ).body.data,
    ).toMatchObject(denied);
    const userAccess = `/v1/admin/users/${holder.user.id}/access?permission=${READ}`;
    expect((await caller(b, root).get(userAccess).expect(200)).body.data).toEqual([]);
    expect(
      (
        await caller(b, root)
          .get(userAccess + at(before))
          .expect(200)
      ).body.data,
    ).toEqual([{ device_id: device, allowed_by: [{ ...path, group_id: null, via: [], last_used_at: null }] }]);
    expect(
      (
        await caller(b, root)
          .get(userAccess + at(after))
          .expect(200)
      ).body.data,
    ).toEqual([]);
    const deviceAccess = `/v1/admin/devices/${device}/access?permission=${READ}&via=authority_permission`;
    expect((await caller(b, root).get(deviceAccess).expect(200)).body.data).toEqual([]);
    expect(
      (
        await caller(b, root)
          .get(deviceAccess + at(before))
          .expect(200)
      ).body.data,
    ).toEqual([{ user_id: holder.user.id, allowed_by: [{ ...path, group_id: null, via: [], last_used_at: null }] }]);

    // The timeline: each right lost at the instant, by expiry, with no actor or event.
    const timeline = await caller(a, root)
      .get(`/v1/admin/devices/${device}/access-timeline?user_id=${holder.user.id}&sort=occurred_at:asc`)
      .expect(200);
    const entries = timeline.body.data as {
      occurred_at: string;
      change: string;
      cause: string;
      permission_code: string;
    }[];
    for (const code of [READ, LIST, REVOKE]) {
      const mine = entries.filter((entry) => entry.permission_code === code);
      expect(mine.map((entry) => `${entry.change} ${entry.cause}`)).toEqual([
        'gained permission_granted',
        'lost expired',
      ]);
      expect(mine[1]).toMatchObject({ occurred_at: expiry, actor_id: null, event_id: null });
    }
  });

  it('an expired row no longer counts: the pair is granted again, in bulk or alone, and revoking it is a no-op', async () => {
    await untilPast(expiresAt);
    const bulk = await caller(b, root)
      .post('/v1/admin/authority-permissions/bulk-grant', {
        items: [{ authority_id: authority, permission_id: permissionId(READ) }],
      })
      .expect(200);
    const [result] = bulk.body.data.results as { status: string; authority_permission_id: number }[];
    expect(result?.status).toBe('granted');
    expect(result?.authority_permission_id).not.toBe(ids[READ]);
    // The new row allows at once on both instances; the expired one stays as it was.
    for (const t of [a, b]) await caller(t, holder).get(`/v1/admin/authorities/${authority}`).expect(200);
    const single = await caller(a, root)
      .post('/v1/admin/authority-permissions', { authority_id: authority, permission_id: permissionId(LIST) })
      .expect(201);
    expect(single.body.data).toMatchObject({ expires_at: null, is_active: true });
    const visible = await caller(a, holder).get(`/v1/admin/authority-permissions?device_id=${device}`).expect(200);
    expect((visible.body.data as { id: number }[]).map((row) => row.id)).toContain(single.body.data.id);
    await caller(a, root).delete(`/v1/admin/authority-permissions/${ids[REVOKE]}`).expect(204);
    const [expired] = await sql<{ revoked_at: Date | null }>(
      'SELECT revoked_at FROM authority_permissions WHERE id = $1',
      [ids[REVOKE]],
    );
    expect(expired?.revoked_at).toBeNull();
    const revoke = await caller(a, root)
      .post('/v1/admin/authority-permissions/bulk-revoke', {
        items: [{ authority_id: authority, permission_id: permissionId(REVOKE) }],
      })
      .expect(200);
    expect(revoke.body.data.results[0]).toMatchObject({ status: 'not_granted' });
    // The access questions see the new grant as the right's newest version.
    const where = await caller(b, root).get(`/v1/admin/users/${holder.user.id}/access?permission=${READ}`);
    expect(where.body.data).toEqual([
      {
        device_id: device,
        allowed_by: [
          {
            decided_by: 'authority_permission',
            authority_id: authority,
            grant_id: null,
            expires_at: expect.any(String) as unknown,
            group_id: null,
            via: [],
            last_used_at: null,
          },
        ],
      },
    ]);
  });

  it('an expiry is set once, at grant: the database refuses to move it, and grantExpiring refuses a held pair', async () => {
    await expect(
      sql("UPDATE authority_permissions SET expires_at = expires_at + interval '1 day' WHERE id = $1", [ids[LIST]]),
    ).rejects.toThrow(/append-only/);
    // Nor may a revocation carry another change with it (the expiry, the holder).
    for (const change of ["expires_at = now() + interval '1 day'", 'user_id = user_id + 1'])
      await expect(
        sql(`UPDATE authority_permissions SET revoked_at = now(), ${change} WHERE id = $1`, [ids[LIST]]),
      ).rejects.toThrow(/append-only/);
    const later = new Date((await dbNow()).getTime() + 3_600_000);
    const held = await grantExpiring('devices.read', later);
    await expect(grantExpiring('devices.read', later)).rejects.toMatchObject({ code: 'AUTHORITY_PERMISSION_EXISTS' });
    const [row] = await sql<{ expires_at: Date; granted_by: number }>(
      'SELECT expires_at, granted_by FROM authority_permissions WHERE id = $1',
      [held.id],
    );
    expect(row).toEqual({ expires_at: later, granted_by: root.user.id });
    const [audit] = await sql<{ reason: string; changes: Record<string, unknown> }>(
      "SELECT reason, changes FROM audit_events WHERE action = 'authority_permission.grant' AND resource_id = $1::text",
      [held.id],
    );
    expect(audit).toMatchObject({ reason: 'access request 1', changes: { expires_at: [null, later.toISOString()] } });
  });
});
