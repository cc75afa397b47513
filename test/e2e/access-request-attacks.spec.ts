import { AuthorityPermissionsService } from '../../src/grants/authority-permissions.service.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { actor, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { accessWorld, askFor, noticesOf, trailOf, worldCounts } from '../support/access-requests.js';
import { sql } from '../support/db.js';
import { createAuthority } from '../support/devices.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

const BASE = '/v1/admin/access-requests';
const CODE = 'authorities.read';
const APPROVE = 'access_requests.approve';

async function untilPast(instant: Date): Promise<void> {
  await sql('SELECT pg_sleep(greatest(0, extract(epoch FROM ($1::timestamptz - clock_timestamp()))) + 0.05)', [
    instant,
  ]);
}
async function dbNow(): Promise<Date> {
  const [row] = await sql<{ now: Date }>('SELECT clock_timestamp() AS now');
  if (row === undefined) throw new Error('no clock');
  return row.now;
}

/** Attacks an independent review tried on just-in-time access (part 6.15) and expiring authority permissions: all held. */
describe('access requests and expiring authority permissions under attack', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('access-request-attacks') });
    root = await actor('super_admin');
  });
  afterAll(() => t?.close());

  function grantExpiring(authority: number, code: string, until: Date): Promise<{ id: number }> {
    const grants = t.app.get(AuthorityPermissionsService);
    return t.app.get(UnitOfWork).run((tx) =>
      grants.grantExpiring(tx, {
        authorityId: authority,
        permissionId: permissionId(code),
        expiresAt: until,
        actorId: root.user.id,
        reason: 'review',
      }),
    );
  }

  it('hostile bodies are 400 and write nothing', async () => {
    const world = await accessWorld();
    const before = await worldCounts(world);
    for (const extra of [
      { duration_seconds: '3600' },
      { duration_seconds: 3600.5 },
      { duration_seconds: -3600 },
      { duration_seconds: 299 },
      { duration_seconds: 1e300 },
      { duration_seconds: null },
      { reason: 'x'.repeat(501) },
      { reason: '   ' },
      { reason: 42 },
      { unknown: 1 },
      { device_id: '1' },
    ]) {
      const res = await caller(t, world.operator).post(BASE, askFor(world, CODE, extra));
      expect([res.status, JSON.stringify(extra)]).toEqual([400, JSON.stringify(extra)]);
    }
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    for (const body of [
      { duration_seconds: 3601 },
      { duration_seconds: '600' },
      { duration_seconds: 0 },
      { duration_seconds: 600.5 },
      { reason: 'x'.repeat(501) },
      { authority_permission_id: 1 },
    ]) {
      const res = await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, body);
      expect([res.status, JSON.stringify(body)]).toEqual([400, JSON.stringify(body)]);
    }
    expect(await worldCounts(world)).toEqual({
      ...before,
      access_requests: (before.access_requests ?? 0) + 1,
      inbox_messages: (before.inbox_messages ?? 0) + 1,
      // access_request.created and inbox_message.create
      audit_events: (before.audit_events ?? 0) + 2,
    });
  });

  it('two asks at once: one 201, one 409, one row and one message per approver', async () => {
    const world = await accessWorld();
    const results = await Promise.all([
      caller(t, world.operator).post(BASE, askFor(world, CODE)),
      caller(t, world.operator).post(BASE, askFor(world, CODE)),
    ]);
    expect(results.map((res) => res.status).sort()).toEqual([201, 409]);
    const [count] = await sql<{ n: string }>('SELECT count(*) AS n FROM access_requests WHERE requester_id = $1', [
      world.operator.user.id,
    ]);
    expect(Number(count?.n)).toBe(1);
    const id = results.find((res) => res.status === 201)?.body.data.id as number;
    expect(await noticesOf(world.owner.user.id, id)).toHaveLength(1);
  });

  it('approve and cancel at once: exactly one wins and the trail matches it', async () => {
    const world = await accessWorld();
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    const [approve, cancel] = await Promise.all([
      caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}),
      caller(t, world.operator).post(`${BASE}/${asked.id}/cancel`, {}),
    ]);
    expect([approve.status, cancel.status].sort()).toEqual([200, 409]);
    const [held] = await sql<{ n: string }>('SELECT count(*) AS n FROM authority_permissions WHERE authority_id = $1', [
      world.authority,
    ]);
    expect(Number(held?.n)).toBe(approve.status === 200 ? 1 : 0);
    const trail = await trailOf(asked.id);
    expect(trail.audit).toEqual([
      'access_request.created',
      approve.status === 200 ? 'access_request.approved' : 'access_request.cancelled',
    ]);
  });

  it('an Idempotency-Key of one approver is not replayed to another', async () => {
    const world = await accessWorld();
    const second = await actor('admin');
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).set('Idempotency-Key', 'k-review').expect(200);
    const other = await caller(t, second).post(`${BASE}/${asked.id}/approve`, {}).set('Idempotency-Key', 'k-review');
    expect(other.status).toBe(409);
    expect(other.headers['idempotent-replayed']).toBeUndefined();
  });

  it('If-Match: a stale version is 412 and changes nothing', async () => {
    const world = await accessWorld();
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).set('If-Match', '"2"').expect(412);
    await caller(t, world.owner).post(`${BASE}/${asked.id}/deny`, { reason: 'no' }).set('If-Match', '"0"').expect(412);
    await caller(t, world.operator).post(`${BASE}/${asked.id}/cancel`, {}).set('If-Match', '"9"').expect(412);
    const detail = await caller(t, world.operator).get(`${BASE}/${asked.id}`).expect(200);
    expect(detail.body.data.state).toBe('pending');
    expect(detail.headers.etag).toBe('"1"');
  });

  it('no ask on a device where the only authority is deactivated or expired', async () => {
    const world = await accessWorld();
    const operator = await actor('operator');
    await createAuthority(world.device, operator.user.id, { isActive: false });
    const res = await caller(t, operator).post(BASE, askFor(world, CODE)).expect(422);
    expect(res.body.error.details.reason).toBe('no_authority');
  });

  it('an approver whose rights are expiring authority permissions decides and sees nothing once they expire', async () => {
    const world = await accessWorld();
    const approver = await actor('operator');
    const approverAuthority = await createAuthority(world.device, approver.user.id);
    const until = new Date((await dbNow()).getTime() + 2500);
    await grantExpiring(approverAuthority, APPROVE, until);
    await grantExpiring(approverAuthority, CODE, until);
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    // Before the instant it may see and (would) decide.
    const listed = await caller(t, approver).get(`${BASE}?device_id=${world.device}`).expect(200);
    expect((listed.body.data as { id: number }[]).map((row) => row.id)).toEqual([asked.id]);
    await caller(t, approver).get(`${BASE}/${asked.id}`).expect(200);
    await untilPast(until);
    const after = await caller(t, approver).get(`${BASE}?device_id=${world.device}`);
    expect([after.status, after.body.data ?? []]).toEqual([after.status === 200 ? 200 : 403, []]);
    const approve = await caller(t, approver).post(`${BASE}/${asked.id}/approve`, {});
    expect([403, 404]).toContain(approve.status);
    const [held] = await sql<{ n: string }>('SELECT count(*) AS n FROM authority_permissions WHERE authority_id = $1', [
      world.authority,
    ]);
    expect(Number(held?.n)).toBe(0);
  });

  it('after an approved access expires, the requester may ask again and be approved again', async () => {
    const world = await accessWorld();
    const until = new Date((await dbNow()).getTime() + 1500);
    const first = await grantExpiring(world.authority, CODE, until);
    // Held unexpired: asking is already_allowed.
    const held = await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(422);
    expect(held.body.error.details.reason).toBe('already_allowed');
    await untilPast(until);
    await caller(t, world.operator).get(`/v1/admin/authorities/${world.ownerAuthority}`).expect(403);
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    const approved = await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).expect(200);
    expect(approved.body.data.authority_permission_id).not.toBe(first.id);
    await caller(t, world.operator).get(`/v1/admin/authorities/${world.ownerAuthority}`).expect(200);
    const check = await caller(t, root)
      .get(`/v1/admin/authz/check?user_id=${world.operator.user.id}&permission=${CODE}&device_id=${world.device}`)
      .expect(200);
    expect(check.body.data.allowed).toBe(true);
    const where = await caller(t, root).get(`/v1/admin/users/${world.operator.user.id}/access?permission=${CODE}`);
    expect(where.body.data).toEqual([expect.objectContaining({ device_id: world.device })]);
    const at = await caller(t, root).get(
      `/v1/admin/users/${world.operator.user.id}/access?permission=${CODE}&at=${encodeURIComponent((await dbNow()).toISOString())}`,
    );
    expect(at.body.data).toEqual(where.body.data);
  });

  it('an authority that expires before its approved permission allows nothing after its own instant, anywhere', async () => {
    const owner = await actor('operator');
    const holder = await actor('operator');
    const device = (await (await import('../support/devices.js')).createDevice({ ownerId: owner.user.id })).id;
    const [ownerAuthority] = await sql<{ id: number }>('SELECT id FROM authorities WHERE device_id = $1 AND owner', [
      device,
    ]);
    const authorityUntil = new Date((await dbNow()).getTime() + 2000);
    const authority = await createAuthority(device, holder.user.id, { expiresAt: authorityUntil });
    await grantExpiring(authority, CODE, new Date(Date.now() + 3_600_000));
    const target = `/v1/admin/authorities/${Number(ownerAuthority?.id)}`;
    await caller(t, holder).get(target).expect(200);
    const userAccess = `/v1/admin/users/${holder.user.id}/access?permission=${CODE}`;
    expect((await caller(t, root).get(userAccess).expect(200)).body.data).toHaveLength(1);
    await untilPast(authorityUntil);
    await caller(t, holder).get(target).expect(403);
    const check = await caller(t, root)
      .get(`/v1/admin/authz/check?user_id=${holder.user.id}&permission=${CODE}&device_id=${device}&explain=true`)
      .expect(200);
    expect(check.body.data.allowed).toBe(false);
    expect((await caller(t, root).get(userAccess).expect(200)).body.data).toEqual([]);
    const now = encodeURIComponent((await dbNow()).toISOString());
    expect((await caller(t, root).get(`${userAccess}&at=${now}`).expect(200)).body.data).toEqual([]);
    expect(
      (await caller(t, root).get(`/v1/admin/devices/${device}/access?permission=${CODE}&via=authority_permission`)).body
        .data,
    ).toEqual([]);
  });

  it('probe: row filtering by requester_id, a revoked approver right, and one event per decision', async () => {
    const world = await accessWorld();
    const stranger = await actor('operator');
    const approver = await actor('operator');
    const approverAuthority = await createAuthority(world.device, approver.user.id, { permissions: [APPROVE, CODE] });
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    const filtered = await caller(t, stranger).get(`${BASE}?requester_id=${world.operator.user.id}`).expect(200);
    expect([filtered.body.data, filtered.body.meta.total]).toEqual([[], 0]);
    await caller(t, stranger).get(`${BASE}/${asked.id}`).expect(404);
    expect((await caller(t, approver).get(`${BASE}?device_id=${world.device}`).expect(200)).body.data).toHaveLength(1);
    const [row] = await sql<{ id: number }>(
      'SELECT id FROM authority_permissions WHERE authority_id = $1 AND permission_id = $2',
      [approverAuthority, permissionId(APPROVE)],
    );
    await caller(t, root)
      .delete(`/v1/admin/authority-permissions/${Number(row?.id)}`)
      .expect(200);
    const after = await caller(t, approver).get(`${BASE}?device_id=${world.device}`).expect(200);
    expect([after.body.data, after.body.meta.total]).toEqual([[], 0]);
    // The approval: one approved event, one grant event, one message to the requester.
    await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).expect(200);
    await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).expect(409);
    await caller(t, world.owner).post(`${BASE}/${asked.id}/deny`, { reason: 'late' }).expect(409);
    expect(await trailOf(asked.id)).toEqual({
      audit: ['access_request.created', 'access_request.approved'],
      feed: ['access_request.created', 'access_request.approved'],
    });
    const grants = await sql<{ action: string }>(
      "SELECT action FROM audit_events WHERE resource_type = 'authority_permission' AND resource_id IN (SELECT id::text FROM authority_permissions WHERE authority_id = $1)",
      [world.authority],
    );
    expect(grants.map((g) => g.action)).toEqual(['authority_permission.grant']);
    expect(await noticesOf(world.operator.user.id, asked.id)).toHaveLength(1);
  });
});
