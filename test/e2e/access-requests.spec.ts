import { AccessRequestExpiry } from '../../src/access-requests/access-request-expiry.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import { actor, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { accessWorld, askFor, noticesOf, trailOf, worldCounts } from '../support/access-requests.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { jobsSchema } from '../support/jobs.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

const BASE = '/v1/admin/access-requests';
const CODE = 'authorities.read';

describe('access requests: just-in-time access (part 6.15)', () => {
  const schema = jobsSchema();
  const options = { widgets: false, cachePrefix: testCachePrefix('access-requests'), env: { JOBS_SCHEMA: schema } };
  let t: TestApp;
  let other: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp(options);
    other = await startApp(options);
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await other.close();
    await t.close();
  });

  it('the operator asks, the owner approves, the operator is allowed on the next request on every instance, until access_expires_at', async () => {
    const world = await accessWorld();
    const target = `/v1/admin/authorities/${world.ownerAuthority}`;
    await caller(t, world.operator).get(target).expect(403);
    await caller(other, world.operator).get(target).expect(403);

    const asked = await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201);
    const request = asked.body.data;
    expect(asked.headers.location).toBe(`${BASE}/${request.id}`);
    expect(asked.headers.etag).toBe('"1"');
    expect(request).toMatchObject({
      requester_id: world.operator.user.id,
      device_id: world.device,
      authority_id: world.authority,
      permission_id: permissionId(CODE),
      permission_code: CODE,
      duration_seconds: 3600,
      state: 'pending',
      decided_by: null,
      authority_permission_id: null,
      access_expires_at: null,
      // The owner decides through the device: the role-allowed super_admins are not told.
      approvers: [world.owner.user.id],
      created_by: world.operator.user.id,
    });
    const pendingFor = Date.parse(request.expires_at) - Date.parse(request.created_at);
    expect(Math.abs(pendingFor - 72 * 3_600_000)).toBeLessThan(5_000);
    const [toOwner] = await noticesOf(world.owner.user.id, request.id);
    expect(toOwner?.data).toEqual({ access_request_id: request.id });
    const pushed = await sql(`SELECT 1 FROM ${schema}.job WHERE name = 'send-push' AND data->>'message_id' = $1`, [
      String(toOwner?.id),
    ]);
    expect(pushed).toHaveLength(1);

    // The owner sees it (it may decide it), reads it through the cache.
    const seen = await caller(t, world.owner).get(`${BASE}/${request.id}`).expect(200);
    expect(seen.body.data.state).toBe('pending');
    expect((await caller(t, world.owner).get(`${BASE}/${request.id}`).expect(200)).body.meta.cache).toBe('hit');

    const approved = await caller(t, world.owner)
      .post(`${BASE}/${request.id}/approve`, { reason: 'ok for tonight' })
      .set('If-Match', '"1"')
      .expect(200);
    const decision = approved.body.data;
    expect(decision).toMatchObject({
      state: 'approved',
      decided_by: world.owner.user.id,
      decision_reason: 'ok for tonight',
    });
    expect(approved.headers.etag).toBe('"2"');
    const lasts = Date.parse(decision.access_expires_at) - Date.parse(decision.decided_at);
    expect(Math.abs(lasts - 3_600_000)).toBeLessThan(5_000);
    const [granted] = await sql<{ authority_id: number; expires_at: Date; granted_by: number; revoked_at: null }>(
      'SELECT authority_id, expires_at, granted_by, revoked_at FROM authority_permissions WHERE id = $1',
      [decision.authority_permission_id],
    );
    expect(granted).toMatchObject({ authority_id: world.authority, granted_by: world.owner.user.id, revoked_at: null });
    expect(granted?.expires_at.toISOString()).toBe(decision.access_expires_at);

    // Allowed on the very next request, on this instance and on the other one sharing Redis.
    await caller(t, world.operator).get(target).expect(200);
    await caller(other, world.operator).get(target).expect(200);
    expect((await caller(other, world.owner).get(`${BASE}/${request.id}`).expect(200)).body.data.state).toBe(
      'approved',
    );

    const [toRequester] = await noticesOf(world.operator.user.id, request.id);
    expect(toRequester?.title).toContain('approved');
    expect(await trailOf(request.id)).toEqual({
      audit: ['access_request.created', 'access_request.approved'],
      feed: ['access_request.created', 'access_request.approved'],
    });
    const [grantEvent] = await sql<{ reason: string; changes: Record<string, unknown> }>(
      "SELECT reason, changes FROM audit_events WHERE action = 'authority_permission.grant' AND resource_id = $1",
      [String(decision.authority_permission_id)],
    );
    expect(grantEvent?.reason).toBe(`access request ${request.id}`);
    expect(grantEvent?.changes).toMatchObject({ expires_at: [null, decision.access_expires_at] });

    const again = await caller(t, root).post(`${BASE}/${request.id}/approve`, {}).expect(409);
    expect(again.body.error).toMatchObject({
      code: 'INVALID_STATE_TRANSITION',
      details: { from: 'approved', action: 'approve' },
    });
    // Allowed now, so asking again is pointless.
    const allowed = await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(422);
    expect(allowed.body.error.details.reason).toBe('already_allowed');
  });

  it('refuses every bad ask with its code and writes nothing', async () => {
    const world = await accessWorld(['authorities.update']);
    const stranger = await actor('operator');
    const viewer = await actor('viewer');
    const before = await worldCounts(world, stranger, viewer);
    const refused = async (who: Caller, body: object, status: number): Promise<Record<string, unknown>> =>
      (await caller(t, who).post(BASE, body).expect(status)).body.error;

    expect(await refused(world.operator, askFor(world, 'users.read'), 422)).toMatchObject({
      code: 'ACCESS_REQUEST_INVALID',
      details: { reason: 'not_device_scoped' },
    });
    expect(await refused(stranger, askFor(world, CODE), 422)).toMatchObject({
      code: 'ACCESS_REQUEST_INVALID',
      details: { reason: 'no_authority' },
    });
    expect(await refused(world.operator, askFor(world, 'authorities.update'), 422)).toMatchObject({
      code: 'ACCESS_REQUEST_INVALID',
      details: { reason: 'already_allowed' },
    });
    // The owner is allowed everything device-scoped on its device.
    expect((await refused(world.owner, askFor(world, CODE), 422)).details).toMatchObject({ reason: 'already_allowed' });
    // A revoked authority is no live relationship.
    const revokedWorld = await accessWorld();
    await sql('UPDATE authorities SET revoked_at = now(), is_active = false WHERE id = $1', [revokedWorld.authority]);
    expect((await refused(revokedWorld.operator, askFor(revokedWorld, CODE), 422)).details).toMatchObject({
      reason: 'no_authority',
    });
    expect(await refused(world.operator, askFor({ device: 9_000_000_000 }, CODE), 404)).toMatchObject({
      code: 'DEVICE_NOT_FOUND',
    });
    expect(await refused(world.operator, askFor(world, CODE, { permission_id: 999 }), 404)).toMatchObject({
      code: 'PERMISSION_NOT_FOUND',
    });
    for (const bad of [
      { reason: '' },
      { reason: '   ' },
      { reason: 'x'.repeat(501) },
      { duration_seconds: 299 },
      { duration_seconds: 2_592_001 },
      { duration_seconds: 3600.5 },
      { state: 'approved' },
    ])
      expect((await refused(world.operator, askFor(world, CODE, bad), 400)).code).toBe('VALIDATION_FAILED');
    expect((await refused(viewer, askFor(world, CODE), 403)).code).toBe('PERMISSION_DENIED');
    expect(await worldCounts(world, stranger, viewer)).toEqual(before);

    // One pending request per requester, device and permission, even when asked twice at once.
    const both = await Promise.all([
      caller(t, world.operator).post(BASE, askFor(world, CODE)),
      caller(t, world.operator).post(BASE, askFor(world, CODE)),
    ]);
    expect(both.map((response) => response.status).sort()).toEqual([201, 409]);
    const conflict = both.find((response) => response.status === 409);
    expect(conflict?.body.error).toMatchObject({
      code: 'INVALID_STATE_TRANSITION',
      details: { from: 'pending', action: 'create' },
    });
    const rows = await sql('SELECT id FROM access_requests WHERE requester_id = $1', [world.operator.user.id]);
    expect(rows).toHaveLength(1);
  });

  it('nobody decides its own request; deciding needs the requested permission too; the duration may only shorten', async () => {
    const world = await accessWorld();
    // A delegate who may approve on the device but does not hold what is asked for.
    const halfDelegate = await actor('operator');
    await createAuthority(world.device, halfDelegate.user.id, { permissions: ['access_requests.approve'] });
    // A delegate who may approve and holds it: an approver, told like the owner.
    const delegate = await actor('operator');
    await createAuthority(world.device, delegate.user.id, { permissions: ['access_requests.approve', CODE] });
    // (Made before the device's authorities are first read: the factories write behind the cache's back.)
    const selfAsker = await actor('operator');
    await createAuthority(world.device, selfAsker.user.id, { permissions: ['access_requests.approve'] });
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    expect(asked.approvers).toEqual([world.owner.user.id, delegate.user.id].sort((a, b) => a - b));
    expect(await noticesOf(halfDelegate.user.id, asked.id)).toEqual([]);
    const before = await worldCounts(world, halfDelegate, delegate);

    const self = await caller(t, world.operator).post(`${BASE}/${asked.id}/approve`, {}).expect(403);
    expect(self.body.error).toMatchObject({
      code: 'PERMISSION_DENIED',
      details: { permission: 'access_requests.approve' },
    });
    const half = await caller(t, halfDelegate).post(`${BASE}/${asked.id}/approve`, {}).expect(403);
    expect(half.body.error).toMatchObject({
      code: 'DELEGATION_FORBIDDEN',
      details: { permission: CODE, device_id: world.device },
    });
    await caller(t, halfDelegate).post(`${BASE}/${asked.id}/deny`, { reason: 'no' }).expect(403);
    // The half delegate may not decide it, so it does not see it either.
    await caller(t, halfDelegate).get(`${BASE}/${asked.id}`).expect(404);
    const longer = await caller(t, delegate)
      .post(`${BASE}/${asked.id}/approve`, { duration_seconds: 3601 })
      .expect(400);
    expect(longer.body.error.details.fields[0]).toMatchObject({ field: 'duration_seconds', rule: 'max' });
    await caller(t, delegate).post(`${BASE}/${asked.id}/approve`, {}).set('If-Match', '"7"').expect(412);
    await caller(t, delegate).post(`${BASE}/${asked.id}/cancel`, {}).expect(403);
    await caller(t, world.owner).post(`${BASE}/${asked.id}/deny`, {}).expect(400);
    expect(await worldCounts(world, halfDelegate, delegate)).toEqual(before);

    const shorter = await caller(t, delegate)
      .post(`${BASE}/${asked.id}/approve`, { duration_seconds: 600 })
      .expect(200);
    const lasts = Date.parse(shorter.body.data.access_expires_at) - Date.parse(shorter.body.data.decided_at);
    expect(Math.abs(lasts - 600_000)).toBeLessThan(5_000);

    // An approver asking for itself: SELF_ACTION_FORBIDDEN.
    const own = (await caller(t, selfAsker).post(BASE, askFor(world, 'authorities.update')).expect(201)).body.data;
    const refused = await caller(t, selfAsker).post(`${BASE}/${own.id}/approve`, {}).expect(422);
    expect(refused.body.error).toMatchObject({ code: 'SELF_ACTION_FORBIDDEN', details: { action: 'approve' } });
    await caller(t, selfAsker).post(`${BASE}/${own.id}/deny`, { reason: 'mine' }).expect(422);
    expect((await sql<{ state: string }>('SELECT state FROM access_requests WHERE id = $1', [own.id]))[0]?.state).toBe(
      'pending',
    );
  });

  it('deny and cancel: the requester is told of a decision; a decided request is 409', async () => {
    const world = await accessWorld();
    const first = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    const denied = await caller(t, world.owner).post(`${BASE}/${first.id}/deny`, { reason: 'not tonight' }).expect(200);
    expect(denied.body.data).toMatchObject({
      state: 'denied',
      decided_by: world.owner.user.id,
      decision_reason: 'not tonight',
    });
    expect((await noticesOf(world.operator.user.id, first.id)).map((notice) => notice.title)).toEqual([
      `Access request ${first.id} denied`,
    ]);
    await caller(t, world.operator).post(`${BASE}/${first.id}/cancel`, {}).expect(409);

    const second = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    const cancelled = await caller(t, world.operator)
      .post(`${BASE}/${second.id}/cancel`, { reason: 'done without it' })
      .expect(200);
    expect(cancelled.body.data).toMatchObject({ state: 'cancelled', decided_by: world.operator.user.id });
    const late = await caller(t, world.owner).post(`${BASE}/${second.id}/approve`, {}).expect(409);
    expect(late.body.error.details).toMatchObject({ from: 'cancelled', action: 'approve' });
    // A stranger who may not see it: 404, like its detail.
    await caller(t, await actor('operator'))
      .post(`${BASE}/${second.id}/cancel`, {})
      .expect(404);
    expect(await trailOf(second.id)).toEqual({
      audit: ['access_request.created', 'access_request.cancelled'],
      feed: ['access_request.created', 'access_request.cancelled'],
    });
    expect(await trailOf(first.id)).toMatchObject({ feed: ['access_request.created', 'access_request.denied'] });
  });

  it('the requester suspended or its authority gone meanwhile: 422 and the request stays pending', async () => {
    const world = await accessWorld();
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    await caller(t, root).post(`/v1/admin/users/${world.operator.user.id}/suspend`, {}).expect(200);
    const before = await worldCounts(world);
    const inactive = await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).expect(422);
    expect(inactive.body.error).toMatchObject({
      code: 'ACCESS_REQUEST_INVALID',
      details: { reason: 'requester_not_active' },
    });
    await caller(t, root).post(`/v1/admin/users/${world.operator.user.id}/activate`, {}).expect(200);
    await caller(t, root).post(`/v1/admin/authorities/${world.authority}/deactivate`, {}).expect(200);
    const gone = await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).expect(422);
    expect(gone.body.error.details.reason).toBe('no_authority');
    // Only root's own writes (activate, deactivate) were recorded; root is not among the world's users.
    expect(await worldCounts(world)).toEqual(before);
    expect((await caller(t, world.owner).get(`${BASE}/${asked.id}`).expect(200)).body.data.state).toBe('pending');
  });

  it('row filtering: an operator sees its own requests and those it may decide; another’s detail is 404', async () => {
    const world = await accessWorld();
    const mine = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    const elsewhere = await accessWorld();
    const theirs = (await caller(t, elsewhere.operator).post(BASE, askFor(elsewhere, CODE)).expect(201)).body.data;
    const ids = async (who: Caller, query = ''): Promise<number[]> =>
      (await caller(t, who).get(`${BASE}?page_size=100${query}`).expect(200)).body.data.map(
        (row: { id: number }) => row.id,
      );

    expect(await ids(world.operator)).toEqual([mine.id]);
    await caller(t, world.operator).get(`${BASE}/${theirs.id}`).expect(404);
    expect(await ids(world.owner)).toEqual([mine.id]);
    await caller(t, world.owner).get(`${BASE}/${theirs.id}`).expect(404);
    expect(await ids(elsewhere.owner)).toEqual([theirs.id]);
    // Whoever decides everywhere sees all, newest first, and the filters narrow.
    const all = await ids(root);
    expect(all.indexOf(theirs.id)).toBeLessThan(all.indexOf(mine.id));
    expect(await ids(root, `&requester_id=${world.operator.user.id}&state=pending`)).toEqual([mine.id]);
    expect(await ids(root, `&device_id=${elsewhere.device}&permission_id=${permissionId(CODE)}`)).toEqual([theirs.id]);
    expect(await ids(root, `&device_id=${elsewhere.device}&state=approved`)).toEqual([]);
    await caller(t, root).get(`${BASE}?state=open`).expect(400);
    await caller(t, root).get(`${BASE}?sort=reason:asc`).expect(400);
    expect(
      (await caller(t, root).get(`${BASE}?device_id=${world.device}&sort=created_at:asc`).expect(200)).body.meta,
    ).toMatchObject({ total: 1, total_exact: true });

    // A delegate who may approve on the device sees the requests for the permissions it holds there
    // (a pair), not the others; the owner (every permission there) sees them all (the whole device).
    const other = (await caller(t, world.operator).post(BASE, askFor(world, 'devices.update')).expect(201)).body.data;
    const delegate = await actor('operator');
    await createAuthority(world.device, delegate.user.id, { permissions: ['access_requests.approve', CODE] });
    expect(await ids(delegate)).toEqual([mine.id]);
    expect(await ids(world.owner)).toEqual([other.id, mine.id]);
    await caller(t, delegate).get(`${BASE}/${other.id}`).expect(404);
    // Rights change: a grant of access_requests.approve shows everything, on the next list.
    await caller(t, root)
      .post('/v1/admin/permission-grants/grant', {
        user_id: world.operator.user.id,
        permission_id: permissionId('access_requests.approve'),
      })
      .expect(201);
    expect(await ids(world.operator)).toEqual(expect.arrayContaining([mine.id, theirs.id]));
    await caller(t, world.operator).get(`${BASE}/${theirs.id}`).expect(200);
  });

  it('a pending request expires: it reads expired at once, and the job records it within its next run', async () => {
    const world = await accessWorld();
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    // Four seconds: time for the two reads below on a busy machine, before the instant.
    const [{ expires_at: instant } = { expires_at: new Date() }] = await sql<{ expires_at: Date }>(
      "UPDATE access_requests SET expires_at = clock_timestamp() + interval '4 seconds' WHERE id = $1 RETURNING expires_at",
      [asked.id],
    );
    expect(await t.app.get(CacheService).invalidateAll()).toBe(true);
    // Cached (and listed) while still pending…
    expect((await caller(t, world.owner).get(`${BASE}/${asked.id}`).expect(200)).body.data.state).toBe('pending');
    expect((await caller(t, world.owner).get(`${BASE}?state=pending`).expect(200)).body.data).toHaveLength(1);
    // Until the database's clock is past the instant (as the service judges it), however long that takes.
    await sql('SELECT pg_sleep(greatest(0, extract(epoch FROM ($1::timestamptz - clock_timestamp()))) + 0.05)', [
      instant,
    ]);
    // …and expired from the instant, before any job ran.
    const cached = await caller(t, world.owner).get(`${BASE}/${asked.id}`).expect(200);
    expect(cached.body.meta.cache).toBe('hit');
    expect(cached.body.data.state).toBe('expired');
    expect((await caller(t, world.owner).get(`${BASE}?state=pending`).expect(200)).body.data).toEqual([]);
    expect((await caller(t, world.owner).get(`${BASE}?state=expired`).expect(200)).body.data).toHaveLength(1);
    const late = await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).expect(409);
    expect(late.body.error.details).toMatchObject({ from: 'expired' });

    expect(await t.app.get(AccessRequestExpiry).run()).toBeGreaterThanOrEqual(1);
    const [row] = await sql<{ state: string; version: number }>(
      'SELECT state, version FROM access_requests WHERE id = $1',
      [asked.id],
    );
    // Version 2 was the spec's own change of expires_at; the job's write is the next one.
    expect(row).toEqual({ state: 'expired', version: 3 });
    const read = await caller(other, world.owner).get(`${BASE}/${asked.id}`).expect(200);
    expect(read.body.data.state).toBe('expired');
    expect(read.headers.etag).toBe('"3"');
    expect(await trailOf(asked.id)).toEqual({
      audit: ['access_request.created', 'access_request.expired'],
      feed: ['access_request.created', 'access_request.expired'],
    });
    expect((await noticesOf(world.operator.user.id, asked.id)).map((notice) => notice.title)).toEqual([
      `Access request ${asked.id} expired`,
    ]);
    expect(await t.app.get(AccessRequestExpiry).run()).toBe(0);
    // The place is free again: a new ask is accepted.
    await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201);
  });

  it('Idempotency-Key replays an ask and an approval without doing the work twice', async () => {
    const world = await accessWorld();
    const ask = () => caller(t, world.operator).post(BASE, askFor(world, CODE)).set('Idempotency-Key', 'jit-ask-1');
    const first = await ask().expect(201);
    const replay = await ask().expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(first.body.data.id);
    const approve = () =>
      caller(t, world.owner).post(`${BASE}/${first.body.data.id}/approve`, {}).set('Idempotency-Key', 'jit-ok-1');
    await approve().expect(200);
    expect((await approve().expect(200)).headers['idempotent-replayed']).toBe('true');
    expect(await sql('SELECT id FROM access_requests WHERE requester_id = $1', [world.operator.user.id])).toHaveLength(
      1,
    );
    expect(await noticesOf(world.operator.user.id, first.body.data.id)).toHaveLength(1);
  });

  it('without any closer approver, those allowed by role are told', async () => {
    const operator = await actor('operator');
    const device = (await createDevice()).id;
    await createAuthority(device, operator.user.id);
    const admin = await actor('admin');
    const asked = (await caller(t, operator).post(BASE, askFor({ device }, CODE)).expect(201)).body.data;
    expect(asked.approvers).toEqual(expect.arrayContaining([root.user.id, admin.user.id]));
    expect(await noticesOf(admin.user.id, asked.id)).toHaveLength(1);
    const approved = await caller(t, admin).post(`${BASE}/${asked.id}/approve`, {}).expect(200);
    expect(approved.body.data.state).toBe('approved');
  });
});
