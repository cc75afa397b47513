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
 * Found by an independent review of just-in-time access (part 6.15):
 * 1. A decision judges the decider's rights again once it holds the request's lock: an approver
 *    that lost the permission while it waited hands nothing on (delegation, part 5).
 * 2. Under the lock the request's state is judged by the clock, not the transaction's start: a
 *    request every reader already sees as `expired` is not approved once the lock frees.
 * 3. A requester demoted to `member` (no admin access) is not granted anything.
 * (Handing an approved right on to a second account without an end is a known limit: docs/decisions.md.)
 */
describe('access requests: what a decision judges under the request’s lock (part 6.15)', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('access-request-decisions') });
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
