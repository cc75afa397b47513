import { AccessReviewClose } from '../../src/access-reviews/access-review-close.js';
import { AccessReviewNotices } from '../../src/access-reviews/access-review-notices.js';
import { AccessReviewSnapshot } from '../../src/access-reviews/access-review-snapshot.js';
import { AccessUses } from '../../src/access-model/access-uses.js';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { caller } from '../support/requests.js';
import {
  DELEGABLE_ON_A_DEVICE,
  inAWeek,
  openReview,
  REVIEWS as BASE,
  reviewItems,
  type ReviewItem,
} from '../support/access-reviews.js';
import { testCachePrefix } from '../support/test-env.js';

interface Review {
  state: string;
  counts: Record<string, number>;
  result: Record<string, number> | null;
  scope: Record<string, unknown>;
}

/** A device with its owner and a delegate holding `permissions`. */
async function deviceWorld(permissions: string[] = ['authorities.read', 'devices.read']): Promise<{
  device: number;
  owner: Caller;
  delegate: Caller;
  authority: number;
}> {
  const owner = await actor('operator');
  const delegate = await actor('operator');
  const device = (await createDevice({ ownerId: owner.user.id })).id;
  const authority = await createAuthority(device, delegate.user.id, { permissions });
  return { device, owner, delegate, authority };
}

async function grantTo(userId: number, code: string): Promise<number> {
  const [grant] = await sql<{ id: number }>(
    'INSERT INTO permission_grants (user_id, permission_id, granted_by) VALUES ($1, $2, NULL) RETURNING id',
    [userId, permissionId(code)],
  );
  return Number(grant?.id);
}

const apLive = async (id: number | null): Promise<boolean> =>
  (await sql<{ live: boolean }>('SELECT revoked_at IS NULL AS live FROM authority_permissions WHERE id = $1', [id]))[0]
    ?.live === true;

const revokeAudits = async (type: 'authority_permission' | 'permission_grant', id: number | null): Promise<number> =>
  (
    await sql<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE action = $1 AND resource_id = $2', [
      `${type}.revoke`,
      String(id),
    ])
  )[0]?.n ?? 0;

/** Attacks on the access-review campaigns of part 6.16, against the real app with job workers. */
describe('access reviews: attacks', () => {
  const app = useApp({
    widgets: false,
    cachePrefix: testCachePrefix('ar-attacks'),
    env: { JOBS_SCHEMA: jobsSchema(), JOB_WORKERS: 'true' },
  });
  let admin: Caller;
  beforeAll(async () => {
    admin = await actor('admin');
  });

  const opened = (scope: object, extra: object = {}, who: Caller = app.root) =>
    openReview(app.t, who, { name: 'attack', scope, ...extra });
  const itemsOf = (id: number, who: Caller = app.root, query = '') => reviewItems(app.t, who, id, query);
  const detail = async (id: number): Promise<Review> =>
    (await caller(app.t, app.root).get(`${BASE}/${id}`).expect(200)).body.data;
  const decide = (id: number, who: Caller, items: object[]) =>
    caller(app.t, who).post(`${BASE}/${id}/decisions`, { items });
  async function closed(id: number, who: Caller = app.root): Promise<Review> {
    const close = await caller(app.t, who).post(`${BASE}/${id}/close`, {}).expect(202);
    expect((await waitForJob(app.t, who.auth, close.body.data.job_id)).state).toBe('succeeded');
    return detail(id);
  }
  /** The counts as the items say they are. */
  async function countsOfItems(id: number): Promise<Record<string, number>> {
    const [row] = await sql<Record<string, number>>(
      `SELECT count(*)::int AS items, count(decision)::int AS decided,
              count(*) FILTER (WHERE decision = 'keep')::int AS keep,
              count(*) FILTER (WHERE decision = 'revoke')::int AS revoke,
              count(*) FILTER (WHERE decision IS NULL)::int AS undecided
       FROM access_review_items WHERE review_id = $1`,
      [id],
    );
    return row ?? {};
  }

  // Self-decisions: a delegate allowed access_reviews.decide through an authority permission may
  // decide the others' items on its device, never its own (not even `keep`), not even its decide right.
  it('refuses a delegate deciding its own items through its access_reviews.decide right', async () => {
    const world = await deviceWorld(['access_reviews.decide', 'devices.read']);
    const other = await actor('viewer');
    await createAuthority(world.device, other.user.id, { permissions: ['authorities.read'] });
    const review = await opened({ device_ids: [world.device] });
    const items = await itemsOf(review.id, world.delegate);
    const own = items.filter((item) => item.user_id === world.delegate.user.id);
    const theirs = items.find((item) => item.user_id === other.user.id);
    expect(own).toHaveLength(2);
    const res = await decide(review.id, world.delegate, [
      ...own.map((item) => ({ item_id: item.id, decision: 'keep' })),
      { item_id: own[1]?.id, decision: 'revoke' },
      { item_id: theirs?.id, decision: 'revoke' },
    ]).expect(400); // the same item twice in one body is refused as a whole
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    const ok = await decide(review.id, world.delegate, [
      ...own.map((item) => ({ item_id: item.id, decision: 'revoke' })),
      { item_id: theirs?.id, decision: 'revoke' },
    ]).expect(200);
    expect(ok.body.data).toMatchObject({ accepted: 3, processed: 1, failed: 2 });
    expect(ok.body.data.results.map((r: { error: { code: string } | null }) => r.error?.code ?? null)).toEqual([
      'SELF_ACTION_FORBIDDEN',
      'SELF_ACTION_FORBIDDEN',
      null,
    ]);
    expect((await detail(review.id)).counts).toEqual({ items: 4, decided: 1, keep: 0, revoke: 1, undecided: 3 });
  });

  // A self-decision of a grant item by an actor holding access_reviews.decide through a grant.
  it('refuses a grant holder deciding its own grant items', async () => {
    const reviewer = await actor('viewer');
    const decideGrant = await grantTo(reviewer.user.id, 'access_reviews.decide');
    const review = await opened({ user_ids: [reviewer.user.id] });
    const items = await itemsOf(review.id, reviewer);
    expect(items.map((item) => item.grant_id)).toEqual([decideGrant]);
    const res = await decide(review.id, reviewer, [{ item_id: items[0]?.id, decision: 'keep' }]).expect(200);
    expect(res.body.data.results[0]).toMatchObject({ status: 'failed', error: { code: 'SELF_ACTION_FORBIDDEN' } });
  });

  // Revoking a grant is a write on its user: an admin (allowed decide by role) may not decide
  // `revoke` on a super_admin's grant, and a default `revoke` applied by an admin's close fails it.
  it('applies the rank rule of a manual revoke to grant items, at the decision and at the close', async () => {
    const boss = await actor('super_admin');
    const peer = await actor('viewer');
    const bossGrant = await grantTo(boss.user.id, 'audit.read');
    const peerGrant = await grantTo(peer.user.id, 'audit.read');
    const review = await opened({ user_ids: [boss.user.id, peer.user.id] }, { default_decision: 'revoke' }, admin);
    const items = await itemsOf(review.id, admin);
    const itemOf = (grant: number): number | undefined => items.find((item) => item.grant_id === grant)?.id;
    const res = await decide(review.id, admin, [
      { item_id: itemOf(bossGrant), decision: 'revoke' },
      { item_id: itemOf(peerGrant), decision: 'keep' },
    ]).expect(200);
    expect(
      res.body.data.results.map((result: { status: string; error: { code: string } | null }) => [
        result.status,
        result.error?.code ?? null,
      ]),
    ).toEqual([
      ['failed', 'ROLE_ESCALATION_FORBIDDEN'],
      ['decided', null],
    ]);
    // Undecided, the super_admin's grant falls to the default; the admin who closes may not revoke it.
    expect((await closed(review.id, admin)).result).toEqual({ revoked: 0, kept: 1, failed: 1 });
    const live = await sql<{ id: number }>(
      'SELECT id FROM permission_grants WHERE id = ANY($1) AND revoked_at IS NULL',
      [[bossGrant, peerGrant]],
    );
    expect(live.map((row) => Number(row.id)).sort((x, y) => x - y)).toEqual(
      [bossGrant, peerGrant].sort((x, y) => x - y),
    );
  });

  // A reviewer allowed decide only on device A: items of device B and grant items fail one by one.
  it('refuses a device reviewer the items of another device and grant items', async () => {
    const a = await deviceWorld(['access_reviews.decide']);
    const b = await deviceWorld(['devices.read']);
    const holder = await actor('viewer');
    await grantTo(holder.user.id, 'audit.read');
    const review = await opened({ user_ids: [a.owner.user.id, b.owner.user.id, b.delegate.user.id, holder.user.id] });
    const items = await itemsOf(review.id);
    const onB = items.filter((item) => item.device_id === b.device);
    const grant = items.find((item) => item.decided_by === 'permission_grant');
    expect(onB).toHaveLength(2);
    expect(grant).toBeDefined();
    const res = await decide(review.id, a.delegate, [
      ...onB.map((item) => ({ item_id: item.id, decision: 'keep' })),
      { item_id: grant?.id, decision: 'keep' },
    ]).expect(200);
    expect(res.body.data).toMatchObject({ processed: 0, failed: 3 });
    for (const result of res.body.data.results) expect(result.error.code).toBe('PERMISSION_DENIED');
    // ... and it sees none of them: only the items of device A (its owner's) are listed.
    const seen = await itemsOf(review.id, a.delegate);
    expect(seen.map((item) => item.device_id)).toEqual([a.device]);
    expect((await detail(review.id)).counts.decided).toBe(0);
  });

  // `revoke` on an owner's authority, by someone else allowed there; `keep` is fine.
  it('refuses revoke on an owner item, keeps keep', async () => {
    const world = await deviceWorld(['access_reviews.decide']);
    const review = await opened({ device_ids: [world.device], user_ids: [world.owner.user.id] });
    const [owned] = await itemsOf(review.id);
    expect(owned).toMatchObject({ decided_by: 'device_owner', revocable: false, recommendation: 'keep' });
    const res = await decide(review.id, world.delegate, [{ item_id: owned?.id, decision: 'revoke' }]).expect(200);
    expect(res.body.data.results[0].error.code).toBe('ACCESS_REVIEW_ITEM_NOT_REVOCABLE');
    const rootTry = await decide(review.id, app.root, [{ item_id: owned?.id, decision: 'revoke' }]).expect(200);
    expect(rootTry.body.data.results[0].error.code).toBe('ACCESS_REVIEW_ITEM_NOT_REVOCABLE');
    await decide(review.id, world.delegate, [{ item_id: owned?.id, decision: 'keep' }]).expect(200);
    // default revoke never reaches an owner's authority either
    const after = await closed(review.id);
    expect(after.result).toEqual({ revoked: 0, kept: 1, failed: 0 });
  });

  // Items of another campaign (and ids that exist nowhere) fail as not found; that campaign is untouched.
  it('refuses item ids of another campaign', async () => {
    const world = await deviceWorld();
    const one = await opened({ device_ids: [world.device] });
    const two = await opened({ device_ids: [world.device] });
    const [foreign] = await itemsOf(two.id, app.root, '&user_id=' + world.delegate.user.id);
    const res = await decide(one.id, admin, [
      { item_id: foreign?.id, decision: 'revoke' },
      { item_id: 9_000_000_000, decision: 'keep' },
    ]).expect(200);
    for (const result of res.body.data.results) expect(result.error.code).toBe('ACCESS_REVIEW_ITEM_NOT_FOUND');
    expect((await itemsOf(two.id)).every((item) => item.decision === null)).toBe(true);
    expect((await detail(two.id)).counts.decided).toBe(0);
    expect((await detail(one.id)).counts.decided).toBe(0);
    await decide(9_000_000_000, admin, [{ item_id: foreign?.id, decision: 'keep' }]).expect(404);
  });

  // Decisions, closes and cancels on campaigns that are closing, closed or cancelled.
  it('refuses decisions on cancelled/closed campaigns and illegal transitions', async () => {
    const world = await deviceWorld();
    const review = await opened({ device_ids: [world.device] });
    const [item] = await itemsOf(review.id, app.root, '&user_id=' + world.delegate.user.id);
    const cancelled = await caller(app.t, app.root).post(`${BASE}/${review.id}/cancel`, {}).expect(200);
    expect(cancelled.body.data.state).toBe('cancelled');
    const late = await decide(review.id, admin, [{ item_id: item?.id, decision: 'revoke' }]).expect(409);
    expect(late.body.error).toMatchObject({ code: 'INVALID_STATE_TRANSITION', details: { from: 'cancelled' } });
    await caller(app.t, app.root).post(`${BASE}/${review.id}/close`, {}).expect(409); // cancel then close
    await caller(app.t, app.root).post(`${BASE}/${review.id}/cancel`, {}).expect(409); // cancel twice
    expect(await apLive(item?.authority_permission_id ?? null)).toBe(true);

    // close then cancel, and two closes at once
    const next = await opened({ device_ids: [world.device] });
    const [first, second] = await Promise.all([
      caller(app.t, app.root).post(`${BASE}/${next.id}/close`, {}),
      caller(app.t, admin).post(`${BASE}/${next.id}/close`, {}),
    ]);
    expect([first.status, second.status].sort()).toEqual([202, 409]);
    const won = first.status === 202 ? first : second;
    await caller(app.t, app.root).post(`${BASE}/${next.id}/cancel`, {}).expect(409);
    await waitForJob(app.t, app.root.auth, won.body.data.job_id);
    expect(await detail(next.id)).toMatchObject({ state: 'closed', result: { revoked: 0, kept: 3, failed: 0 } });
    await caller(app.t, app.root).post(`${BASE}/${next.id}/cancel`, {}).expect(409);
    await caller(app.t, app.root).post(`${BASE}/${next.id}/close`, {}).expect(409);
    const events = await sql<{ type: string }>(
      "SELECT type FROM events WHERE resource_type = 'access_review' AND resource_id = $1 ORDER BY id",
      [String(review.id)],
    );
    expect(events.map((event) => event.type)).toEqual([
      'access_review.create',
      'access_review.opened',
      'access_review.cancelled',
    ]);
    const nextEvents = await sql<{ type: string }>(
      "SELECT type FROM events WHERE resource_type = 'access_review' AND resource_id = $1 AND type = 'access_review.closed'",
      [String(next.id)],
    );
    expect(nextEvents).toHaveLength(1);
  });

  // A close racing decisions, many times: each decision lands before the close (and is applied)
  // or is refused with 409 (and leaves nothing behind); never half-applied.
  it('a close racing decisions never half-applies a decision', async () => {
    for (let round = 0; round < 6; round += 1) {
      const world = await deviceWorld(['authorities.read', 'devices.read', 'devices.update', 'authorities.create']);
      const review = await opened({ device_ids: [world.device], user_ids: [world.delegate.user.id] });
      const items = await itemsOf(review.id);
      expect(items).toHaveLength(4);
      const requests = items.map((item) => decide(review.id, admin, [{ item_id: item.id, decision: 'revoke' }]));
      const closing = caller(app.t, app.root).post(`${BASE}/${review.id}/close`, {});
      // Interleave: the close goes out between the decisions.
      const answers = await Promise.all([requests[0], requests[1], closing, requests[2], requests[3]]);
      const close = answers[2];
      expect(close?.status).toBe(202);
      await waitForJob(app.t, app.root.auth, close?.body.data.job_id);
      const decisions = [answers[0], answers[1], answers[3], answers[4]];
      const after = await itemsOf(review.id);
      let landed = 0;
      for (const [index, item] of items.entries()) {
        const status = decisions[index]?.status;
        expect([200, 409]).toContain(status);
        const now = after.find((row) => row.id === item.id);
        if (status === 200) {
          landed += 1;
          expect(now?.decision).toBe('revoke');
          expect(await apLive(item.authority_permission_id)).toBe(false);
        } else {
          expect(now?.decision).toBeNull();
          expect(await apLive(item.authority_permission_id)).toBe(true);
        }
      }
      const final = await detail(review.id);
      expect(final.counts).toEqual(await countsOfItems(review.id));
      expect(final.result).toEqual({ revoked: landed, kept: 4 - landed, failed: 0 });
    }
  });

  // Re-deciding the same items many times, in sequence and concurrently: counts stay equal to the items.
  it('keeps counts consistent across repeated and concurrent re-decisions', async () => {
    const world = await deviceWorld(['authorities.read', 'devices.read', 'devices.update']);
    const review = await opened({ device_ids: [world.device] });
    const items = await itemsOf(review.id);
    const ids = items.filter((item) => item.revocable).map((item) => item.id);
    for (const decision of ['keep', 'revoke', 'revoke', 'keep', 'revoke']) {
      await decide(
        review.id,
        admin,
        ids.map((id) => ({ item_id: id, decision })),
      ).expect(200);
      expect((await detail(review.id)).counts).toEqual(await countsOfItems(review.id));
    }
    const reviewers = [admin, app.root, world.owner];
    await Promise.all(
      Array.from({ length: 15 }, (_, n) =>
        decide(
          review.id,
          reviewers[n % 3] as Caller,
          ids.map((id, k) => ({ item_id: id, decision: (n + k) % 2 === 0 ? 'keep' : 'revoke' })),
        ).expect(200),
      ),
    );
    const counts = (await detail(review.id)).counts;
    expect(counts).toEqual(await countsOfItems(review.id));
    expect(counts.decided).toBe(3);
    expect(Number(counts.keep) + Number(counts.revoke)).toBe(3);
  });

  // A path revoked by hand, then the same pair granted again after the snapshot: the close
  // counts the item revoked and leaves the NEW path alone (authority permission and grant).
  it('a re-grant after the snapshot survives the close', async () => {
    const world = await deviceWorld(['devices.read']);
    const holder = await actor('viewer');
    const oldGrant = await grantTo(holder.user.id, 'audit.read');
    const review = await opened({ user_ids: [world.delegate.user.id, holder.user.id] }, { default_decision: 'revoke' });
    const items = await itemsOf(review.id);
    const ap = items.find((item) => item.decided_by === 'authority_permission');
    const grant = items.find((item) => item.decided_by === 'permission_grant');
    expect(grant?.grant_id).toBe(oldGrant);

    await caller(app.t, app.root).delete(`/v1/admin/authority-permissions/${ap?.authority_permission_id}`).expect(200);
    const regranted = await caller(app.t, app.root)
      .post('/v1/admin/authority-permissions', {
        authority_id: world.authority,
        permission_id: permissionId('devices.read'),
      })
      .expect(201);
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/revoke', {
        user_id: holder.user.id,
        permission_id: permissionId('audit.read'),
      })
      .expect(200);
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/grant', { user_id: holder.user.id, permission_id: permissionId('audit.read') })
      .expect(201);
    const [newGrant] = await sql<{ id: number; revoked_at: Date | null }>(
      'SELECT id, revoked_at FROM permission_grants WHERE user_id = $1 AND revoked_at IS NULL',
      [holder.user.id],
    );
    expect(Number(newGrant?.id)).not.toBe(oldGrant);

    const after = await closed(review.id);
    expect(after.result).toEqual({ revoked: 2, kept: 0, failed: 0 });
    expect(await apLive(regranted.body.data.id)).toBe(true);
    const [still] = await sql<{ revoked_at: Date | null }>('SELECT revoked_at FROM permission_grants WHERE id = $1', [
      newGrant?.id,
    ]);
    expect(still?.revoked_at).toBeNull();
    // each old path revoked exactly once (by hand), the new ones never
    expect(await revokeAudits('authority_permission', ap?.authority_permission_id ?? null)).toBe(1);
    expect(await revokeAudits('authority_permission', regranted.body.data.id)).toBe(0);
    expect(await revokeAudits('permission_grant', oldGrant)).toBe(1);
    expect(await revokeAudits('permission_grant', Number(newGrant?.id))).toBe(0);
  });

  // A path that expired during the campaign counts as revoked and writes no revocation. The
  // campaign is taken first; its item for the path is then added as the snapshot would have taken
  // it before the expiry (an expiry is set once, at grant: the row is written expired already).
  it('an expired path counts as revoked without a revoke write', async () => {
    const world = await deviceWorld([]);
    const review = await opened({ user_ids: [world.delegate.user.id] });
    const [expired] = await sql<{ id: number }>(
      `INSERT INTO authority_permissions (authority_id, permission_id, granted_at, expires_at)
       VALUES ($1, $2, now() - interval '2 days', now() - interval '1 day') RETURNING id`,
      [world.authority, permissionId('devices.read')],
    );
    await sql(
      `INSERT INTO access_review_items (review_id, kind, path_id, user_id, device_id, permission_id, authority_id, granted_at)
       SELECT $1, 'a', ap.id, a.user_id, a.device_id, ap.permission_id, a.id, ap.granted_at
       FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id WHERE ap.id = $2`,
      [review.id, expired?.id],
    );
    await sql('UPDATE access_reviews SET item_count = item_count + 1 WHERE id = $1', [review.id]);
    const [item] = await itemsOf(review.id);
    expect(item?.authority_permission_id).toBe(Number(expired?.id));
    await decide(review.id, admin, [{ item_id: item?.id, decision: 'revoke' }]).expect(200);
    const after = await closed(review.id);
    expect(after.result).toEqual({ revoked: 1, kept: 0, failed: 0 });
    expect(await revokeAudits('authority_permission', item?.authority_permission_id ?? null)).toBe(0);
  });

  // Hostile bodies and queries: every one a 400 (or the 404 of a missing referenced record).
  it('refuses hostile create bodies', async () => {
    const world = await deviceWorld();
    const good = { name: 'x', default_decision: 'keep', due_at: inAWeek() };
    const ids = (n: number): number[] => Array.from({ length: n }, (_, k) => k + 1);
    const bad: [object, number, string][] = [
      [{ ...good, name: '   ' }, 400, 'VALIDATION_FAILED'],
      [{ ...good, name: '' }, 400, 'VALIDATION_FAILED'],
      [{ ...good, name: 'n'.repeat(201) }, 400, 'VALIDATION_FAILED'],
      [{ ...good, name: 5 }, 400, 'VALIDATION_FAILED'],
      [{ ...good, default_decision: 'maybe' }, 400, 'VALIDATION_FAILED'],
      [{ ...good, due_at: '2020-01-01T00:00:00Z' }, 400, 'VALIDATION_FAILED'],
      [{ ...good, due_at: 'tomorrow' }, 400, 'VALIDATION_FAILED'],
      [{ ...good, extra: 1 }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { device_ids: [world.device], extra: 1 } }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: null }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: [] }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { device_ids: ['1'] } }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { device_ids: [1.5] } }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { device_ids: [-1] } }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { device_ids: ids(1001) } }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { user_ids: ids(1001) } }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { permission_codes: Array(1001).fill('devices.read') } }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { permission_codes: ['no.such'] } }, 404, 'PERMISSION_NOT_FOUND'],
      [{ ...good, scope: { permission_codes: [7] } }, 400, 'VALIDATION_FAILED'],
      [{ ...good, scope: { device_ids: [world.device, 9_000_000_000] } }, 404, 'DEVICE_NOT_FOUND'],
      [{ ...good, scope: { user_ids: [9_000_000_000] } }, 404, 'USER_NOT_FOUND'],
    ];
    const before = (await sql<{ n: number }>('SELECT count(*)::int AS n FROM access_reviews'))[0]?.n;
    for (const [body, status, code] of bad) {
      const res = await caller(app.t, app.root).post(BASE, body);
      expect([JSON.stringify(body).slice(0, 120), res.status, res.body.error?.code]).toEqual([
        JSON.stringify(body).slice(0, 120),
        status,
        code,
      ]);
    }
    // a deleted user in the scope is missing too
    const gone = await createUser({ role: 'viewer' });
    await sql('UPDATE users SET is_deleted = true WHERE id = $1', [gone.id]);
    await caller(app.t, app.root)
      .post(BASE, { ...good, scope: { user_ids: [gone.id] } })
      .expect(404);
    // duplicates in the scope are stored once, sorted
    const dup = await opened({
      device_ids: [world.device, world.device],
      permission_codes: ['devices.read', 'devices.read'],
    });
    expect((await detail(dup.id)).scope).toEqual({ device_ids: [world.device], permission_codes: ['devices.read'] });
    const after = (await sql<{ n: number }>('SELECT count(*)::int AS n FROM access_reviews'))[0]?.n;
    expect(Number(after) - Number(before)).toBeGreaterThanOrEqual(1);
  });

  it('refuses hostile decision bodies', async () => {
    const world = await deviceWorld();
    const review = await opened({ device_ids: [world.device] });
    const [item] = await itemsOf(review.id, app.root, '&user_id=' + world.delegate.user.id);
    const bad: object[] = [
      {},
      { items: [] },
      { items: Array.from({ length: 1001 }, (_, k) => ({ item_id: k + 1, decision: 'keep' })) },
      { items: [{ item_id: item?.id, decision: 'drop' }] },
      { items: [{ item_id: String(item?.id), decision: 'keep' }] },
      { items: [{ item_id: item?.id, decision: 'keep', extra: true }] },
      { items: [{ item_id: item?.id, decision: 'keep', note: 'n'.repeat(501) }] },
      { items: [{ item_id: item?.id, decision: 'keep', note: null }] },
      { items: [{ item_id: 0, decision: 'keep' }] },
      { items: [{ item_id: item?.id, decision: 'keep' }], extra: 1 },
      { items: 'all' },
    ];
    for (const body of bad) {
      const res = await caller(app.t, app.root).post(`${BASE}/${review.id}/decisions`, body);
      expect([JSON.stringify(body).slice(0, 80), res.status]).toEqual([JSON.stringify(body).slice(0, 80), 400]);
    }
    await caller(app.t, app.root).post(`${BASE}/${review.id}/close`, { force: true }).expect(400);
    await caller(app.t, app.root).get(`${BASE}/${review.id}/items?decision=maybe`).expect(400);
    await caller(app.t, app.root).get(`${BASE}/${review.id}/items?color=red`).expect(400);
    await caller(app.t, app.root).get(`${BASE}/abc/items`).expect(400);
    expect((await detail(review.id)).counts.decided).toBe(0);
  });

  // Route permissions: 403 codes for each route, per role.
  it('answers 403 to roles without the route permission', async () => {
    const world = await deviceWorld();
    const review = await opened({ device_ids: [world.device] });
    const viewer = await actor('viewer');
    const operator = await actor('operator');
    const member = await actor('member');
    const body = { name: 'x', default_decision: 'keep', due_at: inAWeek() };
    for (const who of [viewer, operator]) {
      expect((await caller(app.t, who).post(BASE, body).expect(403)).body.error.code).toBe('PERMISSION_DENIED');
      expect((await caller(app.t, who).post(`${BASE}/${review.id}/close`, {}).expect(403)).body.error.code).toBe(
        'PERMISSION_DENIED',
      );
      expect((await caller(app.t, who).post(`${BASE}/${review.id}/cancel`, {}).expect(403)).body.error.code).toBe(
        'PERMISSION_DENIED',
      );
      await caller(app.t, who).get(BASE).expect(200);
      await caller(app.t, who).get(`${BASE}/${review.id}`).expect(200);
      // they see the campaign, and none of its items (no decide anywhere)
      expect(await itemsOf(review.id, who)).toEqual([]);
    }
    for (const path of [BASE, `${BASE}/${review.id}`, `${BASE}/${review.id}/items`])
      expect((await caller(app.t, member).get(path).expect(403)).body.error.code).toBe('ROLE_FORBIDDEN');
    // a viewer without decide anywhere deciding: refused item by item
    const [item] = await itemsOf(review.id);
    const res = await decide(review.id, viewer, [{ item_id: item?.id, decision: 'keep' }]);
    expect([403, 200]).toContain(res.status);
    if (res.status === 200) expect(res.body.data.results[0].error.code).toBe('PERMISSION_DENIED');
    expect((await detail(review.id)).counts.decided).toBe(0);
  });

  // Jobs (part 6.10): visible to their creator and super_admin/admin only.
  it('shows the snapshot and close jobs only to their creator and admins', async () => {
    const world = await deviceWorld();
    const review = await opened({ device_ids: [world.device] }, {}, admin);
    const otherAdmin = await actor('admin');
    const close = await caller(app.t, otherAdmin).post(`${BASE}/${review.id}/close`, {}).expect(202);
    const job = await waitForJob(app.t, otherAdmin.auth, close.body.data.job_id);
    expect(job).toMatchObject({ state: 'succeeded', created_by: otherAdmin.user.id });
    expect(job.result).toMatchObject({ access_review_id: review.id, revoked: 0, kept: 3, failed: 0 });
    for (const jobId of [review.job_id, close.body.data.job_id]) {
      await caller(app.t, app.root).get(`/v1/admin/jobs/${jobId}`).expect(200);
      await caller(app.t, admin).get(`/v1/admin/jobs/${jobId}`).expect(200);
      for (const who of [world.owner, await actor('viewer')]) {
        const res = await caller(app.t, who).get(`/v1/admin/jobs/${jobId}`).expect(404);
        expect(res.body.error.code).toBe('JOB_NOT_FOUND');
      }
    }
    // the close ran as the closer
    const [audit] = await sql<{ actor_id: string | null }>(
      "SELECT actor_id FROM audit_events WHERE action = 'access_review.closed' AND resource_id = $1",
      [String(review.id)],
    );
    expect(Number(audit?.actor_id)).toBe(otherAdmin.user.id);
  });

  // Cache: the detail and the item pages follow decisions and recorded uses at once.
  it('serves no stale detail or item page after decisions and uses', async () => {
    const world = await deviceWorld(['devices.read']);
    const review = await opened({ device_ids: [world.device] });
    await detail(review.id);
    await detail(review.id);
    const items = await itemsOf(review.id);
    await itemsOf(review.id);
    const ap = items.find((item) => item.decided_by === 'authority_permission');
    expect(ap).toMatchObject({ recommendation: 'revoke', last_used_at: null });
    await decide(review.id, admin, [{ item_id: ap?.id, decision: 'revoke' }]).expect(200);
    expect((await detail(review.id)).counts).toMatchObject({ decided: 1, revoke: 1 });
    expect((await itemsOf(review.id)).find((item) => item.id === ap?.id)?.decision).toBe('revoke');
    expect(await itemsOf(review.id, app.root, '&decision=none')).toHaveLength(1);
    // the delegate uses its path: the item shows the use and recommends keep
    await caller(app.t, world.delegate).get(`/v1/admin/devices/${world.device}`).expect(200);
    await app.t.app.get(AccessUses).flush();
    const used = (await itemsOf(review.id)).find((item) => item.id === ap?.id);
    expect(used?.last_used_at).not.toBeNull();
    expect(used?.recommendation).toBe('keep');
    expect(await itemsOf(review.id, app.root, '&recommendation=revoke')).toEqual([]);
  });

  // Scope filters of the snapshot: device_ids leave out grants; only non-device permissions leave out owners.
  it('snapshots exactly the scope', async () => {
    const world = await deviceWorld(['devices.read', 'authorities.read']);
    await grantTo(world.delegate.user.id, 'audit.read');
    await grantTo(world.delegate.user.id, 'access_reviews.decide');
    const users = [world.owner.user.id, world.delegate.user.id];
    const byDevice = await itemsOf((await opened({ device_ids: [world.device] })).id);
    expect(byDevice.map((item) => item.decided_by).sort()).toEqual([
      'authority_permission',
      'authority_permission',
      'device_owner',
    ]);
    const grantsOnly = await itemsOf((await opened({ user_ids: users, permission_codes: ['audit.read'] })).id);
    expect(grantsOnly.map((item) => [item.decided_by, item.permission_code])).toEqual([
      ['permission_grant', 'audit.read'],
    ]);
    const decideOnly = await itemsOf(
      (await opened({ user_ids: users, permission_codes: ['access_reviews.decide', 'authorities.read'] })).id,
    );
    expect(decideOnly.map((item) => [item.decided_by, item.permission_code]).sort()).toEqual([
      ['authority_permission', 'authorities.read'],
      ['device_owner', null],
      ['permission_grant', 'access_reviews.decide'],
    ]);
    const oneUser = await itemsOf((await opened({ user_ids: [world.owner.user.id] })).id);
    expect(oneUser.map((item) => item.decided_by)).toEqual(['device_owner']);
    // a revoked, an expired and a deleted authority's paths are not taken
    await sql("UPDATE authorities SET expires_at = now() - interval '1 second' WHERE id = $1", [world.authority]);
    const expired = await itemsOf((await opened({ user_ids: [world.delegate.user.id] })).id);
    expect(expired.map((item) => item.decided_by)).toEqual(['permission_grant', 'permission_grant']);
  });

  // The due notice: sent once per reviewer even when the notice runs race; none when due within a day at open.
  it('sends the due notice once, and none for a campaign due within a day', async () => {
    const world = await deviceWorld(['access_reviews.decide']);
    const notices = app.t.app.get(AccessReviewNotices);
    const told = async (id: number, userId: number): Promise<string[]> =>
      (
        await sql<{ title: string }>(
          `SELECT title FROM inbox_messages WHERE type = 'access_review' AND data->>'access_review_id' = $1
           AND user_id = $2 ORDER BY id`,
          [String(id), userId],
        )
      ).map((row) => row.title.split(':')[0] ?? '');
    const later = await opened({ device_ids: [world.device] });
    expect(await told(later.id, world.delegate.user.id)).toEqual(['Access review opened']);
    await sql("UPDATE access_reviews SET due_at = now() + interval '1 hour' WHERE id = $1", [later.id]);
    await Promise.all([notices.sendDue(), notices.sendDue(), notices.sendDue()]);
    await notices.sendDue();
    expect(await told(later.id, world.delegate.user.id)).toEqual(['Access review opened', 'Access review due soon']);
    expect(await told(later.id, world.owner.user.id)).toEqual(['Access review opened', 'Access review due soon']);
    const soon = await opened(
      { device_ids: [world.device] },
      { due_at: new Date(Date.now() + 3_600_000).toISOString() },
    );
    await notices.sendDue();
    expect(await told(soon.id, world.delegate.user.id)).toEqual(['Access review opened']);
    // a cancelled campaign tells no one any more
    const cancelled = await opened({ device_ids: [world.device] });
    await caller(app.t, app.root).post(`${BASE}/${cancelled.id}/cancel`, {}).expect(200);
    await sql("UPDATE access_reviews SET due_at = now() + interval '1 hour' WHERE id = $1", [cancelled.id]);
    await notices.sendDue();
    expect(await told(cancelled.id, world.delegate.user.id)).toEqual(['Access review opened']);
  });

  // Optimistic concurrency and the cached list: a decision moves the version (a stale cancel is
  // 412), and the state filter of the list follows a cancel at once.
  it('refuses a stale If-Match and keeps the list in step with the state', async () => {
    const world = await deviceWorld();
    const review = await opened({ device_ids: [world.device] });
    const listed = async (state: string): Promise<number[]> =>
      (await caller(app.t, app.root).get(`${BASE}?state=${state}&page_size=100`).expect(200)).body.data.map(
        (row: { id: number }) => row.id,
      );
    expect(await listed('open')).toContain(review.id);
    await listed('open');
    const etag = (await caller(app.t, app.root).get(`${BASE}/${review.id}`).expect(200)).headers.etag as string;
    const [item] = await itemsOf(review.id);
    await decide(review.id, admin, [{ item_id: item?.id, decision: 'keep' }]).expect(200);
    const stale = await caller(app.t, app.root)
      .post(`${BASE}/${review.id}/cancel`, {})
      .set('If-Match', etag)
      .expect(412);
    expect(stale.body.error.code).toBe('PRECONDITION_FAILED');
    await caller(app.t, app.root).post(`${BASE}/${review.id}/close`, {}).set('If-Match', etag).expect(412);
    const fresh = (await caller(app.t, app.root).get(`${BASE}/${review.id}`).expect(200)).headers.etag as string;
    await caller(app.t, app.root).post(`${BASE}/${review.id}/cancel`, {}).set('If-Match', fresh).expect(200);
    expect(await listed('open')).not.toContain(review.id);
    expect(await listed('cancelled')).toContain(review.id);
    expect((await detail(review.id)).state).toBe('cancelled');
  });

  // Notices: reviewers are told; a delegate whose decide authority is deactivated may not decide, so is not told.
  it('tells only the users who may decide', async () => {
    const world = await deviceWorld(['access_reviews.decide']);
    const inactive = await actor('operator');
    await createAuthority(world.device, inactive.user.id, {
      permissions: ['access_reviews.decide'],
      isActive: false,
    });
    const elsewhere = await deviceWorld(['access_reviews.decide']);
    const review = await opened({ device_ids: [world.device] });
    const told = (
      await sql<{ user_id: number }>(
        "SELECT user_id FROM inbox_messages WHERE type = 'access_review' AND data->>'access_review_id' = $1",
        [String(review.id)],
      )
    ).map((row) => Number(row.user_id));
    expect(told).toContain(world.owner.user.id);
    expect(told).toContain(world.delegate.user.id);
    expect(told).toContain(admin.user.id);
    expect(told).not.toContain(elsewhere.delegate.user.id);
    expect(told).not.toContain(inactive.user.id);
    expect(new Set(told).size).toBe(told.length);
    // the inactive delegate indeed may not decide there
    const [item] = await itemsOf(review.id, app.root, '&user_id=' + world.owner.user.id);
    const res = await decide(review.id, inactive, [{ item_id: item?.id, decision: 'keep' }]).expect(200);
    expect(res.body.data.results[0].error.code).toBe('PERMISSION_DENIED');
  });
});

/**
 * The close's resumability: no workers at first, so the test drives the snapshot and one step of
 * the close itself (a crash after it), then an app with workers takes the queued close job up.
 */
describe('access reviews: a close that crashed mid-way resumes', () => {
  const schema = jobsSchema();
  // No job workers: the test drives the jobs itself.
  const app = useApp({
    widgets: false,
    cachePrefix: testCachePrefix('ar-resume'),
    env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'false' },
  });

  // Decisions, close and cancel on a preparing campaign; a cancelled one is never snapshotted.
  it('refuses decisions and close while preparing; cancel stops the snapshot', async () => {
    const owner = await actor('operator');
    const device = (await createDevice({ ownerId: owner.user.id })).id;
    const res = await caller(app.t, app.root)
      .post(BASE, { name: 'prep', scope: { device_ids: [device] }, default_decision: 'keep', due_at: inAWeek() })
      .expect(202);
    const id = res.body.data.id;
    await caller(app.t, app.root)
      .post(`${BASE}/${id}/decisions`, { items: [{ item_id: 1, decision: 'keep' }] })
      .expect(409);
    await caller(app.t, app.root).post(`${BASE}/${id}/close`, {}).expect(409);
    await caller(app.t, app.root).post(`${BASE}/${id}/cancel`, {}).expect(200);
    expect(await app.t.app.get(AccessReviewSnapshot).take(id)).toBeUndefined();
    const [row] = await sql<{ state: string; n: number }>(
      'SELECT state, (SELECT count(*)::int FROM access_review_items WHERE review_id = $1) AS n FROM access_reviews WHERE id = $1',
      [id],
    );
    expect(row).toEqual({ state: 'cancelled', n: 0 });
  });

  /** A device with 36 delegates holding 16 device-scoped permissions each: 576 revocable items and the owner's. */
  async function bigDevice(): Promise<{ device: number; users: { id: number }[] }> {
    const owner = await actor('operator');
    const device = (await createDevice({ ownerId: owner.user.id })).id;
    // 36 delegates with every device-scoped permission but one: 36 × 16 = 576 revocable items
    const users = await sql<{ id: number }>(
      `INSERT INTO users (email, display_name, role_id, status_id)
       SELECT 'resume-' || gen_random_uuid() || '@example.com', 'resume', 4, 2 FROM generate_series(1, 36) RETURNING id`,
    );
    await sql(
      `WITH a AS (INSERT INTO authorities (device_id, user_id) SELECT $1, x FROM unnest($2::bigint[]) x RETURNING id)
       INSERT INTO authority_permissions (authority_id, permission_id) SELECT a.id, p.id FROM a, permissions p WHERE p.code = ANY($3)`,
      [device, users.map((row) => row.id), DELEGABLE_ON_A_DEVICE],
    );
    return { device, users };
  }

  it('finishes after a crash, revoking nothing twice', async () => {
    const { device, users } = await bigDevice();
    const res = await caller(app.t, app.root)
      .post(BASE, { name: 'resume', scope: { device_ids: [device] }, default_decision: 'revoke', due_at: inAWeek() })
      .expect(202);
    const id: number = res.body.data.id;
    expect(await app.t.app.get(AccessReviewSnapshot).take(id)).toBe(577);
    // one item kept by decision
    const [kept] = (
      await caller(app.t, app.root)
        .get(`${BASE}/${id}/items?page_size=1&decision=none&user_id=${users[0]?.id}`)
        .expect(200)
    ).body.data as ReviewItem[];
    await caller(app.t, app.root)
      .post(`${BASE}/${id}/decisions`, { items: [{ item_id: kept?.id, decision: 'keep' }] })
      .expect(200);
    const close = await caller(app.t, app.root).post(`${BASE}/${id}/close`, {}).expect(202);
    const closing = app.t.app.get(AccessReviewClose);
    expect(await closing.step(id, app.root.user.id)).toBe('more'); // then "crash"
    // closing: decisions, a second close and a cancel are refused
    const late = await caller(app.t, app.root)
      .post(`${BASE}/${id}/decisions`, { items: [{ item_id: kept?.id, decision: 'revoke' }] })
      .expect(409);
    expect(late.body.error.details).toMatchObject({ from: 'closing' });
    await caller(app.t, app.root).post(`${BASE}/${id}/close`, {}).expect(409);
    await caller(app.t, app.root).post(`${BASE}/${id}/cancel`, {}).expect(409);
    const [half] = await sql<{ settled: number; revoked: number }>(
      `SELECT count(outcome)::int AS settled,
              (SELECT count(*)::int FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id
               WHERE a.device_id = $2 AND ap.revoked_at IS NOT NULL) AS revoked
       FROM access_review_items WHERE review_id = $1`,
      [id, device],
    );
    expect(half?.settled).toBe(500);
    expect((await caller(app.t, app.root).get(`${BASE}/${id}`).expect(200)).body.data.state).toBe('closing');

    // a worker takes the queued close job up and finishes
    const w = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('ar-resume'),
      env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'true' },
    });
    try {
      const job = await waitForJob(w, app.root.auth, close.body.data.job_id, 60_000);
      expect(job.state).toBe('succeeded');
      expect(job.result).toEqual({ access_review_id: id, revoked: 575, kept: 2, failed: 0 });
    } finally {
      await w.close();
    }
    const final = (await caller(app.t, app.root).get(`${BASE}/${id}`).expect(200)).body.data;
    expect(final).toMatchObject({ state: 'closed', result: { revoked: 575, kept: 2, failed: 0 } });
    expect(await closing.step(id, app.root.user.id)).toBe('not_closing'); // a late retry does nothing
    const [audits] = await sql<{ n: number; distinct: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT resource_id)::int AS distinct FROM audit_events
       WHERE action = 'authority_permission.revoke' AND reason = $1`,
      [`access review ${id}`],
    );
    expect(audits).toEqual({ n: 575, distinct: 575 });
    expect(await apLive(kept?.authority_permission_id ?? null)).toBe(true);
    expect(half?.revoked).toBeLessThanOrEqual(500);
    const closedEvents = await sql(
      "SELECT 1 FROM events WHERE resource_type = 'access_review' AND resource_id = $1 AND type = 'access_review.closed'",
      [String(id)],
    );
    expect(closedEvents).toHaveLength(1);
  });

  // A close whose job failed for good (every retry spent) leaves the campaign closing: closing it
  // again starts a new job that resumes where the failed one stopped.
  it('closes again after the close job failed for good, resuming where it stopped', async () => {
    const { device } = await bigDevice();
    const res = await caller(app.t, app.root)
      .post(BASE, { name: 'again', scope: { device_ids: [device] }, default_decision: 'revoke', due_at: inAWeek() })
      .expect(202);
    const id: number = res.body.data.id;
    await app.t.app.get(AccessReviewSnapshot).take(id);
    const first = await caller(app.t, app.root).post(`${BASE}/${id}/close`, {}).expect(202);
    expect(await app.t.app.get(AccessReviewClose).step(id, app.root.user.id)).toBe('more');
    await caller(app.t, app.root).post(`${BASE}/${id}/close`, {}).expect(409); // its job is still waiting
    await sql(`UPDATE ${schema}.job SET state = 'failed' WHERE id = $1`, [first.body.data.job_id]);
    const again = await caller(app.t, app.root).post(`${BASE}/${id}/close`, {}).expect(202);
    expect(again.body.data.job_id).not.toBe(first.body.data.job_id);
    const w = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('ar-resume'),
      env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'true' },
    });
    try {
      expect((await waitForJob(w, app.root.auth, again.body.data.job_id, 60_000)).state).toBe('succeeded');
    } finally {
      await w.close();
    }
    const closed = (await caller(app.t, app.root).get(`${BASE}/${id}`).expect(200)).body.data;
    expect(closed).toMatchObject({ state: 'closed', result: { revoked: 576, kept: 1, failed: 0 } });
    const [audits] = await sql<{ n: number; distinct: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT resource_id)::int AS distinct FROM audit_events
       WHERE action = 'authority_permission.revoke' AND reason = $1`,
      [`access review ${id}`],
    );
    expect(audits).toEqual({ n: 576, distinct: 576 });
  });

  // Several steps at once (two workers after an expiry, or a retry beside a slow attempt): they
  // take turns on the campaign's lock, each chunk is settled once, the campaign closes once.
  it('concurrent steps of one close settle each item once', async () => {
    const { device } = await bigDevice();
    const res = await caller(app.t, app.root)
      .post(BASE, { name: 'steps', scope: { device_ids: [device] }, default_decision: 'revoke', due_at: inAWeek() })
      .expect(202);
    const id: number = res.body.data.id;
    await app.t.app.get(AccessReviewSnapshot).take(id);
    const close = await caller(app.t, app.root).post(`${BASE}/${id}/close`, {}).expect(202);
    const closing = app.t.app.get(AccessReviewClose);
    const steps = await Promise.all([
      closing.step(id, app.root.user.id),
      closing.step(id, app.root.user.id),
      closing.step(id, app.root.user.id),
      closing.step(id, app.root.user.id),
    ]);
    expect([...steps].sort()).toEqual(['closed', 'more', 'more', 'not_closing']);
    const w = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('ar-resume'),
      env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'true' },
    });
    try {
      const job = await waitForJob(w, app.root.auth, close.body.data.job_id, 60_000);
      expect(job).toMatchObject({ state: 'succeeded', result: { revoked: 576, kept: 1, failed: 0 } });
    } finally {
      await w.close();
    }
    const [audits] = await sql<{ n: number; distinct: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT resource_id)::int AS distinct FROM audit_events
       WHERE action = 'authority_permission.revoke' AND reason = $1`,
      [`access review ${id}`],
    );
    expect(audits).toEqual({ n: 576, distinct: 576 });
    const closedAudits = await sql(
      "SELECT 1 FROM audit_events WHERE action = 'access_review.closed' AND resource_id = $1",
      [String(id)],
    );
    expect(closedAudits).toHaveLength(1);
  });
});
