import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { testDatabaseUrl } from '../support/test-env.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import { actor, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { accessWorld, askFor } from '../support/access-requests.js';
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

/**
 * Independent review of just-in-time access (part 6.15): each test here fails on the reviewed
 * code (0180663 + bench commit 3f9b4a5).
 * 1. An approval judges the approver's rights before its transaction, then waits for the request's
 *    lock: an approver that lost the permission meanwhile still hands it on (delegation, part 5).
 * 2. The lock's `state` is judged at the transaction's start (now()): a request clients already
 *    read as `expired` is approved once the lock frees.
 * 3. JIT access is laundered into permanent access through a second account (delegation of a
 *    right held only until access_expires_at has no end).
 * 4. A requester demoted to `member` (no admin access) is still granted the access.
 */
describe('review (failing): access requests and expiring authority permissions', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('review-jit-f') });
    root = await actor('super_admin');
  });
  afterAll(() => t?.close());

  it('a requester demoted to member is not granted access', async () => {
    const world = await accessWorld();
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    const memberRole = await sql<{ id: number }>("SELECT id FROM roles WHERE code = 'member'");
    await caller(t, root)
      .patch(`/v1/admin/users/${world.operator.user.id}`, { role_id: Number(memberRole[0]?.id) })
      .expect(200);
    const res = await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {});
    expect(res.status).toBe(422);
    expect(res.body.error?.details?.reason).toBe('requester_not_active');
  });

  it('an approval grants access for that long and no longer: a second account cannot make it permanent', async () => {
    const GRANT = 'authority_permissions.grant';
    const world = await accessWorld();
    // A second account the requester controls, related to the same device, with no rights of its own.
    const accomplice = await actor('operator');
    const accompliceAuthority = await createAuthority(world.device, accomplice.user.id);
    const asked = (
      await caller(t, world.operator)
        .post(BASE, askFor(world, GRANT, { duration_seconds: 300 }))
        .expect(201)
    ).body.data;
    const approved = (await caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}).expect(200)).body.data;
    const until = Date.parse(approved.access_expires_at as string);
    // The requester hands the right on to its second account, which hands it back without an end.
    const handedOn = await caller(t, world.operator).post('/v1/admin/authority-permissions', {
      authority_id: accompliceAuthority,
      permission_id: permissionId(GRANT),
    });
    const handedBack = await caller(t, accomplice).post('/v1/admin/authority-permissions', {
      authority_id: world.authority,
      permission_id: permissionId(GRANT),
    });
    const paths = async (userId: number): Promise<{ expires_at: string | null }[]> =>
      (
        await caller(t, root)
          .get(`/v1/admin/authz/check?user_id=${userId}&permission=${GRANT}&device_id=${world.device}&explain=true`)
          .expect(200)
      ).body.data.paths;
    const outlives = (list: { expires_at: string | null }[]): boolean =>
      list.some((path) => path.expires_at === null || Date.parse(path.expires_at) > until);
    // Whatever the fix (refuse the hand-on, or cap it at the delegator's own end), nothing the
    // approved access produced may outlive access_expires_at.
    expect({
      handed_on: handedOn.status,
      handed_back: handedBack.status,
      requester_outlives: outlives(await paths(world.operator.user.id)),
      accomplice_outlives: outlives(await paths(accomplice.user.id)),
    }).toMatchObject({ requester_outlives: false, accomplice_outlives: false });
  });

  it('an approver whose right to the permission is revoked while its approval is under way grants nothing', async () => {
    const world = await accessWorld();
    const approver = await actor('operator');
    const approverAuthority = await createAuthority(world.device, approver.user.id, { permissions: [APPROVE, CODE] });
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    // Another transaction holds the request row (as a concurrent decision would, for a moment).
    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM access_requests WHERE id = $1 FOR UPDATE', [asked.id]);
      const approving = caller(t, approver)
        .post(`${BASE}/${asked.id}/approve`, {})
        .then((res) => res);
      // Wait until the approval passed its checks and waits for the request's lock.
      for (let i = 0; i < 100; i += 1) {
        const waiting = await sql(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM access_requests WHERE id = $1 FOR UPDATE%' AND pid <> $1",
          [(holder as unknown as { processID: number }).processID],
        );
        if (waiting.length > 0) break;
        await sleep(50);
      }
      // Meanwhile the approver loses the requested permission: it may no longer hand it on.
      const [held] = await sql<{ id: number }>(
        'SELECT id FROM authority_permissions WHERE authority_id = $1 AND permission_id = $2',
        [approverAuthority, permissionId(CODE)],
      );
      await caller(t, root)
        .delete(`/v1/admin/authority-permissions/${Number(held?.id)}`)
        .expect(200);
      await caller(t, approver).get(`/v1/admin/authorities/${world.ownerAuthority}`).expect(403);
      await holder.query('COMMIT');
      const approved = await approving;
      const granted = await sql('SELECT id FROM authority_permissions WHERE authority_id = $1', [world.authority]);
      expect({ status: approved.status, granted: granted.length }).toEqual({ status: 403, granted: 0 });
    } finally {
      await holder.end();
    }
  });

  it('an approval that waited past the pending expiry is 409 expired, not approved after reading expired', async () => {
    const world = await accessWorld();
    const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
    const [row] = await sql<{ expires_at: Date }>(
      "UPDATE access_requests SET expires_at = clock_timestamp() + interval '1500 milliseconds' WHERE id = $1 RETURNING expires_at",
      [asked.id],
    );
    expect(await t.app.get(CacheService).invalidateAll()).toBe(true);
    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM access_requests WHERE id = $1 FOR UPDATE', [asked.id]);
      const approving = caller(t, world.owner)
        .post(`${BASE}/${asked.id}/approve`, {})
        .then((res) => res);
      for (let i = 0; i < 100; i += 1) {
        const waiting = await sql(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM access_requests WHERE id = $1 FOR UPDATE%'",
        );
        if (waiting.length > 0) break;
        await sleep(50);
      }
      await untilPast(row?.expires_at as Date);
      // Clients are told it expired.
      expect((await caller(t, world.operator).get(`${BASE}/${asked.id}`).expect(200)).body.data.state).toBe('expired');
      await holder.query('COMMIT');
      const approved = await approving;
      const [after] = await sql<{ state: string }>('SELECT state FROM access_requests WHERE id = $1', [asked.id]);
      expect({ status: approved.status, state: after?.state }).toEqual({ status: 409, state: 'pending' });
    } finally {
      await holder.end();
    }
  });
});
