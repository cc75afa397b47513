import { DeviceAuthoritiesService } from '../../src/access-model/device-authorities.service.js';
import { withRawRedis } from '../support/redis-raw.js';
import { actor, createUser, permissionId, tokenFor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { caller } from '../support/requests.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';

describe('POST /cache/rebuild (part 6.14): drops and warms projections in a job, reads stay correct', () => {
  let t: TestApp;
  let root: Caller;
  const prefix = (): string => testCachePrefix('rebuild');

  /**
   * The keys of this app's current cache generation that hold a live entry (not a tombstone),
   * without the prefix and generation.
   */
  async function cachedKeys(): Promise<Set<string>> {
    return withRawRedis(TEST_REDIS_URL, async (redis) => {
      const keys = new Set<string>();
      for (const [key, stored] of await redis.entries(prefix()))
        if (!/^\d+:\d+\|0\|$/.test((await redis.get(stored)) ?? '')) keys.add(key);
      return keys;
    });
  }

  beforeAll(async () => {
    t = await startApp({
      widgets: false,
      cachePrefix: prefix(),
      // The write loop below runs for as long as the job: more than one actor's minute of requests.
      // A cache budget the loaded CI machine cannot exceed: a timed-out cache write makes the
      // service drop its whole cache (by design), which would hide what this spec looks at.
      env: {
        JOBS_SCHEMA: jobsSchema(),
        JOB_WORKERS: 'true',
        RATE_LIMIT_PER_MINUTE: '1000000',
        CACHE_TIMEOUT_MS: '2000',
      },
    });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('answers 202 with the job; the job drops everything and warms sessions, device sets and counts', async () => {
    const device = await createDevice();
    const recipient = await createUser({ role: 'member' });
    await caller(t, root)
      .post('/v1/admin/inbox', { user_id: recipient.id, type: 'notice', title: 'T', body: 'B' })
      .expect(201);
    await caller(t, root).get(`/v1/admin/users/${root.user.id}`).expect(200); // a detail entry, to be dropped
    const response = await caller(t, root).post('/v1/admin/cache/rebuild', { scope: 'all' }).expect(202);
    expect(response.body.data).toEqual({ job_id: expect.any(String) as unknown, state: 'queued' });
    expect(response.headers.location).toBe(`/v1/admin/jobs/${response.body.data.job_id}`);
    expect(response.headers['retry-after']).toBeDefined();
    const job = await waitForJob(t, root.auth, response.body.data.job_id as string);
    expect(job).toMatchObject({ type: 'cache-rebuild', state: 'succeeded', result: { scope: 'all' } });
    expect((job.result as { entries_written: number }).entries_written).toBeGreaterThan(0);
    const keys = await cachedKeys();
    expect(keys.has(`auth:session:${sessionOf(root)}`)).toBe(true);
    expect(keys.has(`auth:user:${root.user.id}`)).toBe(true);
    expect(keys.has(`authz:device:${device.id}`)).toBe(true);
    expect(keys.has(`read-counts:${recipient.id}:*`)).toBe(true);
    expect(keys.has(`res:user:${root.user.id}`)).toBe(false);
    const [event] = await sql<{ actor_id: number; resource_type: string; changes: unknown }>(
      "SELECT actor_id, resource_type, changes FROM audit_events WHERE request_id = $1 AND action = 'cache.rebuild'",
      [response.headers['x-request-id']],
    );
    expect(event).toEqual({
      actor_id: root.user.id,
      resource_type: 'cache',
      changes: { scope: [null, 'all'], job_id: [null, response.body.data.job_id] },
    });
  });

  it('drops only the chosen kind: scope auth leaves the device sets and details in place', async () => {
    const device = await createDevice();
    const owner = await actor('operator');
    await createAuthority(device.id, owner.user.id, { permissions: ['devices.read'] });
    await caller(t, owner).get(`/v1/admin/devices/${device.id}`).expect(200);
    // The owner's read is decided from its auth context; the device's set is cached on its first use.
    await t.app.get(DeviceAuthoritiesService).forDevice(device.id);
    await caller(t, root).get(`/v1/admin/users/${owner.user.id}`).expect(200);
    const before = await cachedKeys();
    expect(before.has(`authz:device:${device.id}`) && before.has(`res:user:${owner.user.id}`)).toBe(true);
    const response = await caller(t, root).post('/v1/admin/cache/rebuild', { scope: 'auth' }).expect(202);
    const job = await waitForJob(t, root.auth, response.body.data.job_id as string);
    expect(job).toMatchObject({ state: 'succeeded', result: { scope: 'auth' } });
    const after = await cachedKeys();
    expect(after.has(`authz:device:${device.id}`)).toBe(true);
    expect(after.has(`res:user:${owner.user.id}`)).toBe(true);
    expect(after.has(`auth:user:${owner.user.id}`)).toBe(true);
  });

  it('a drop keeps each entry’s version: a fill loaded before a write cannot land after the rebuild dropped it', async () => {
    const cache = t.app.get(CacheEntries);
    const key = `res:probe:${Date.now()}`;
    // A write stored version 2; the rebuild drops it; a read that had loaded version 1 fills late.
    await cache.put(key, { version: 2, deleted: false, json: '{"id":1,"name":"new"}' }, true);
    expect(await cache.dropByPrefix('res:probe:')).toBeGreaterThan(0);
    expect(await cache.put(key, { version: 1, deleted: false, json: '{"id":1,"name":"old"}' }, false)).toBe(true);
    const after = await cache.get(key);
    expect(after.entry?.json ?? '').not.toContain('old');
    // A fill at the current version (or newer) is stored again.
    await cache.put(key, { version: 2, deleted: false, json: '{"id":1,"name":"new"}' }, false);
    expect((await cache.get(key)).entry?.json).toContain('new');
  });

  it('is refused without cache.rebuild (an admin, a viewer) and for an unknown scope', async () => {
    for (const role of ['admin', 'viewer'] as const) {
      const who = await actor(role);
      const refused = await caller(t, who).post('/v1/admin/cache/rebuild', {}).expect(403);
      expect(refused.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'cache.rebuild' } });
    }
    const bad = await caller(t, root).post('/v1/admin/cache/rebuild', { scope: 'everything' }).expect(400);
    expect(bad.body.error.details.fields[0].field).toBe('scope');
  });

  it('writes during a rebuild leave no stale entry: sessions, device rights and counts answer as the database says', async () => {
    // Enough devices that the warm-up takes a while.
    await sql(
      "INSERT INTO devices (serial_number, name) SELECT 'SN-RB-' || g || '-' || $1, 'Bulk' FROM generate_series(1, 3000) g",
      [String(Date.now())],
    );
    const device = await createDevice();
    const operator = await actor('operator');
    const authority = await createAuthority(device.id, operator.user.id, { permissions: ['devices.read'] });
    // A user whose role flips between viewer (devices.read everywhere) and operator (only through authorities).
    const flipping = await createUser({ role: 'viewer' });
    const flippingToken = await tokenFor(flipping);
    const recipient = await createUser({ role: 'member' });
    const message = await caller(t, root)
      .post('/v1/admin/inbox', { user_id: recipient.id, type: 'notice', title: 'T', body: 'B' })
      .expect(201);
    const [state] = await sql<{ id: number }>('SELECT id FROM message_read_state WHERE message_id = $1', [
      message.body.data.id,
    ]);

    const response = await caller(t, root).post('/v1/admin/cache/rebuild', { scope: 'all' }).expect(202);
    const jobId = response.body.data.job_id as string;
    let finished = false;
    const done = waitForJob(t, root.auth, jobId, 60_000).finally(() => (finished = true));
    let round = 0;
    while (!finished || round < 6) {
      const grant = round % 2 === 0;
      await caller(t, root)
        .post(`/v1/admin/authority-permissions/bulk-${grant ? 'revoke' : 'grant'}`, {
          items: [{ authority_id: authority, permission_id: permissionId('devices.read') }],
        })
        .expect(200);
      await caller(t, root)
        .patch(`/v1/admin/users/${flipping.id}`, { role_id: round % 2 === 0 ? 3 : 4 })
        .expect(200);
      await caller(t, root)
        .post(`/v1/admin/message-read-state/${state?.id}/mark-read`, { read: round % 2 === 0 })
        .expect(200);
      round += 1;
    }
    expect(await done).toMatchObject({ state: 'succeeded', error: null });

    // The last round left: devices.read revoked or granted, the user operator or viewer, the message read or not.
    const [truth] = await sql<{ granted: boolean; viewer: boolean; unread: number }>(
      `SELECT EXISTS (SELECT 1 FROM authority_permissions WHERE authority_id = $1 AND revoked_at IS NULL) AS granted,
              (SELECT role_id = 4 FROM users WHERE id = $2) AS viewer,
              (SELECT count(*) FROM message_read_state WHERE user_id = $3 AND NOT is_read)::int AS unread`,
      [authority, flipping.id, recipient.id],
    );
    await caller(t, operator)
      .get(`/v1/admin/devices/${device.id}`)
      .expect(truth?.granted === true ? 200 : 403);
    await t
      .http()
      .get(`/v1/admin/devices/${device.id}`)
      .set('Authorization', `Bearer ${flippingToken}`)
      .expect(truth?.viewer === true ? 200 : 403);
    const counts = await caller(t, root).get(`/v1/admin/message-read-state/counts?user_id=${recipient.id}`).expect(200);
    expect(counts.body.data.unread).toBe(truth?.unread);
  }, 90_000);
});

/** The session id inside a caller's token. */
function sessionOf(who: Caller): string {
  const payload = JSON.parse(Buffer.from(who.token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
    sid: string;
  };
  return payload.sid;
}
