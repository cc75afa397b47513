import { actor, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { accessWorld, askFor } from '../support/access-requests.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

const BASE = '/v1/admin/access-requests';
const CODE = 'authorities.read';

describe('access requests under concurrency (part 6.15)', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('access-request-races') });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('two approvers at once: exactly one wins, the other is 409, and one authority permission is granted', async () => {
    for (let round = 0; round < 3; round += 1) {
      const world = await accessWorld();
      const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
      const answers = await Promise.all([
        caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}),
        caller(t, root).post(`${BASE}/${asked.id}/approve`, { duration_seconds: 900 }),
      ]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
      const lost = answers.find((answer) => answer.status === 409);
      expect(lost?.body.error).toMatchObject({
        code: 'INVALID_STATE_TRANSITION',
        details: { from: 'approved', action: 'approve' },
      });
      const granted = await sql<{ id: number }>(
        'SELECT id FROM authority_permissions WHERE authority_id = $1 AND permission_id = $2',
        [world.authority, permissionId(CODE)],
      );
      expect(granted).toHaveLength(1);
      const [row] = await sql<{ state: string; authority_permission_id: number }>(
        'SELECT state, authority_permission_id FROM access_requests WHERE id = $1',
        [asked.id],
      );
      expect(row).toEqual({ state: 'approved', authority_permission_id: granted[0]?.id });
    }
  });

  it('an approval racing a revocation of the requester’s authority never approves onto a revoked authority', async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < 6; round += 1) {
      const world = await accessWorld();
      const asked = (await caller(t, world.operator).post(BASE, askFor(world, CODE)).expect(201)).body.data;
      // Both at once: whichever commits first, the other sees it (the scheduler picks the order).
      const [approved, revoked] = await Promise.all([
        caller(t, world.owner).post(`${BASE}/${asked.id}/approve`, {}),
        caller(t, root).post(`/v1/admin/authorities/${world.authority}/revoke`, { reason: 'left' }),
      ]);
      expect(revoked?.status).toBe(200);
      const [request] = await sql<{ state: string; authority_permission_id: number | null }>(
        'SELECT state, authority_permission_id FROM access_requests WHERE id = $1',
        [asked.id],
      );
      const [authority] = await sql<{ revoked_at: Date }>('SELECT revoked_at FROM authorities WHERE id = $1', [
        world.authority,
      ]);
      if (approved?.status === 200) {
        outcomes.add('approved first');
        // The approval committed before the revocation (the feed's order is commit order): it was
        // granted while the authority was live. Transaction start times would not say so.
        const order = await sql<{ type: string }>(
          `SELECT type FROM events WHERE (type = 'access_request.approved' AND resource_id = $1)
             OR (type = 'authority.revoke' AND resource_id = $2) ORDER BY seq`,
          [String(asked.id), String(world.authority)],
        );
        expect(request?.state).toBe('approved');
        expect(order.map((event) => event.type)).toEqual(['access_request.approved', 'authority.revoke']);
        expect(authority?.revoked_at).toBeInstanceOf(Date);
      } else {
        outcomes.add('revoked first');
        expect(approved?.status).toBe(422);
        expect(approved?.body.error.details.reason).toBe('no_authority');
        expect(request).toEqual({ state: 'pending', authority_permission_id: null });
        const granted = await sql('SELECT id FROM authority_permissions WHERE authority_id = $1', [world.authority]);
        expect(granted).toEqual([]);
      }
      // Either way the operator is not allowed on the device now.
      await caller(t, world.operator).get(`/v1/admin/authorities/${world.ownerAuthority}`).expect(403);
    }
    // Both orders are met on an idle machine; which ones a loaded machine meets is its scheduler's choice.
    expect(outcomes.size).toBeGreaterThanOrEqual(1);
  });
});
