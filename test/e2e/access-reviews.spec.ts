import { AccessReviewNotices } from '../../src/access-reviews/access-review-notices.js';
import { actor, permissionId, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { caller } from '../support/requests.js';
import { DAY, openReview, REVIEWS as BASE, reviewItems } from '../support/access-reviews.js';
import { testCachePrefix } from '../support/test-env.js';

/** A device with its owner, a delegate holding two rights, and a user holding a grant. */
async function reviewWorld(): Promise<{
  device: number;
  owner: Caller;
  delegate: Caller;
  holder: Caller;
  authority: number;
  grant: number;
}> {
  const owner = await actor('operator');
  const delegate = await actor('operator');
  const holder = await actor('viewer');
  const device = (await createDevice({ ownerId: owner.user.id })).id;
  const authority = await createAuthority(device, delegate.user.id, {
    permissions: ['authorities.read', 'devices.read'],
  });
  const [grant] = await sql<{ id: number }>(
    'INSERT INTO permission_grants (user_id, permission_id, granted_by) VALUES ($1, $2, NULL) RETURNING id',
    [holder.user.id, permissionId('audit.read')],
  );
  return { device, owner, delegate, holder, authority, grant: Number(grant?.id) };
}

/** `/access-reviews` (part 6.16): campaigns snapshot, decide, close and revoke. */
describe('access reviews: certification campaigns', () => {
  const app = useApp({
    widgets: false,
    cachePrefix: testCachePrefix('access-reviews'),
    env: { JOBS_SCHEMA: jobsSchema(), JOB_WORKERS: 'true' },
  });

  const opened = (scope: object, extra: object = {}) =>
    openReview(app.t, app.root, { name: 'Q4 delegated rights', scope, ...extra });
  const itemsOf = (id: number, who: Caller = app.root, query = '') => reviewItems(app.t, who, id, query);

  it('snapshots the device’s rights, takes decisions, and the close revokes exactly the revoke items', async () => {
    const world = await reviewWorld();
    const review = await opened({ device_ids: [world.device] });
    const detail = (await caller(app.t, app.root).get(`${BASE}/${review.id}`).expect(200)).body.data;
    expect(detail).toMatchObject({
      id: review.id,
      state: 'open',
      scope: { device_ids: [world.device] },
      default_decision: 'keep',
      counts: { items: 3, decided: 0, keep: 0, revoke: 0, undecided: 3 },
      result: null,
      job_id: review.job_id,
      created_by: app.root.user.id,
    });
    // In the contract's order.
    expect(Object.keys(detail.counts)).toEqual(['items', 'decided', 'keep', 'revoke', 'undecided']);
    const items = await itemsOf(review.id);
    expect(items.map((item) => [item.user_id, item.decided_by, item.permission_code, item.revocable])).toEqual(
      [
        [world.owner.user.id, 'device_owner', null, false],
        [world.delegate.user.id, 'authority_permission', 'authorities.read', true],
        [world.delegate.user.id, 'authority_permission', 'devices.read', true],
      ].sort((a, b) => Number(a[0]) - Number(b[0])),
    );
    const [read, devices] = items.filter((item) => item.decided_by === 'authority_permission');
    expect(read?.recommendation).toBe('revoke'); // never used

    // The owner decides on its device: revoke one, keep the other; its own item is refused.
    const owned = items.find((item) => item.decided_by === 'device_owner');
    const decided = await caller(app.t, world.owner)
      .post(`${BASE}/${review.id}/decisions`, {
        items: [
          { item_id: read?.id, decision: 'revoke', note: 'not needed' },
          { item_id: devices?.id, decision: 'keep' },
          { item_id: owned?.id, decision: 'keep' },
        ],
      })
      .expect(200);
    expect(decided.body.data).toMatchObject({ accepted: 3, processed: 2, failed: 1 });
    expect(decided.body.data.results[2]).toMatchObject({ status: 'failed', error: { code: 'SELF_ACTION_FORBIDDEN' } });
    const counted = (await caller(app.t, app.root).get(`${BASE}/${review.id}`).expect(200)).body.data;
    expect(counted.counts).toEqual({ items: 3, decided: 2, keep: 1, revoke: 1, undecided: 1 });
    expect(await itemsOf(review.id, app.root, '&decision=revoke')).toEqual([
      expect.objectContaining({
        id: read?.id,
        decision: 'revoke',
        note: 'not needed',
        reviewer_id: world.owner.user.id,
      }),
    ]);

    const close = await caller(app.t, app.root).post(`${BASE}/${review.id}/close`, {}).expect(202);
    expect((await waitForJob(app.t, app.root.auth, close.body.data.job_id)).state).toBe('succeeded');
    const closed = (await caller(app.t, app.root).get(`${BASE}/${review.id}`).expect(200)).body.data;
    expect(closed).toMatchObject({ state: 'closed', result: { revoked: 1, kept: 2, failed: 0 } });
    expect(Object.keys(closed.result)).toEqual(['revoked', 'kept', 'failed']);

    // The access questions agree: the revoked right is gone, the kept one stays.
    const check = async (code: string): Promise<boolean> =>
      (
        await caller(app.t, app.root)
          .get(`/v1/admin/authz/check?user_id=${world.delegate.user.id}&permission=${code}&device_id=${world.device}`)
          .expect(200)
      ).body.data.allowed;
    expect(await check('authorities.read')).toBe(false);
    expect(await check('devices.read')).toBe(true);
    const [revoked] = await sql<{ revoked_at: Date | null }>(
      'SELECT revoked_at FROM authority_permissions WHERE id = $1',
      [read?.authority_permission_id],
    );
    expect(revoked?.revoked_at).not.toBeNull();
    const audit = await sql<{ action: string; reason: string | null }>(
      "SELECT action, reason FROM audit_events WHERE resource_type = 'authority_permission' AND resource_id = $1",
      [String(read?.authority_permission_id)],
    );
    expect(audit).toEqual([{ action: 'authority_permission.revoke', reason: `access review ${review.id}` }]);
    const events = await sql<{ type: string }>(
      "SELECT type FROM events WHERE resource_type = 'access_review' AND resource_id = $1 ORDER BY id",
      [String(review.id)],
    );
    expect(events.map((event) => event.type)).toEqual([
      'access_review.create',
      'access_review.opened',
      'access_review.decide',
      'access_review.close',
      'access_review.closed',
    ]);
    // Decisions are refused once closed.
    const late = await caller(app.t, world.owner)
      .post(`${BASE}/${review.id}/decisions`, { items: [{ item_id: devices?.id, decision: 'revoke' }] })
      .expect(409);
    expect(late.body.error).toMatchObject({ code: 'INVALID_STATE_TRANSITION', details: { from: 'closed' } });
  });

  it('a grant revoked by hand during the campaign closes as revoked; default revoke takes the undecided', async () => {
    const world = await reviewWorld();
    const review = await opened({ user_ids: [world.holder.user.id] }, { default_decision: 'revoke' });
    const items = await itemsOf(review.id);
    expect(items).toEqual([
      expect.objectContaining({
        user_id: world.holder.user.id,
        decided_by: 'permission_grant',
        grant_id: world.grant,
        device_id: null,
      }),
    ]);
    await caller(app.t, app.root)
      .post('/v1/admin/permission-grants/revoke', {
        user_id: world.holder.user.id,
        permission_id: permissionId('audit.read'),
      })
      .expect(200);
    const close = await caller(app.t, app.root).post(`${BASE}/${review.id}/close`, {}).expect(202);
    await waitForJob(app.t, app.root.auth, close.body.data.job_id);
    const closed = (await caller(app.t, app.root).get(`${BASE}/${review.id}`).expect(200)).body.data;
    expect(closed.result).toEqual({ revoked: 1, kept: 0, failed: 0 });
    const revokes = await sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_events WHERE action = 'permission_grant.revoke' AND resource_id = $1",
      [String(world.grant)],
    );
    expect(revokes[0]?.n).toBe(1);
  });

  it('tells reviewers through the inbox when a campaign opens', async () => {
    const world = await reviewWorld();
    const review = await opened({ device_ids: [world.device] });
    const told = await sql<{ user_id: number; title: string }>(
      "SELECT user_id, title FROM inbox_messages WHERE type = 'access_review' AND data->>'access_review_id' = $1",
      [String(review.id)],
    );
    const recipients = told.map((row) => Number(row.user_id));
    expect(recipients).toContain(world.owner.user.id);
    expect(recipients).toContain(app.root.user.id);
    expect(recipients).not.toContain(world.delegate.user.id);
  });

  it('reminds reviewers once, 24 hours before the campaign is due; one due within a day gets the opening notice only', async () => {
    const world = await reviewWorld();
    const later = await opened({ device_ids: [world.device] });
    const soon = await opened({ device_ids: [world.device] }, { due_at: new Date(Date.now() + DAY / 2).toISOString() });
    const titles = async (id: number): Promise<string[]> =>
      (
        await sql<{ title: string }>(
          "SELECT title FROM inbox_messages WHERE user_id = $1 AND type = 'access_review' AND data->>'access_review_id' = $2 ORDER BY id",
          [world.owner.user.id, String(id)],
        )
      ).map((row) => row.title);
    const notices = app.t.app.get(AccessReviewNotices);
    await notices.sendDue();
    expect(await titles(later.id)).toEqual(['Access review opened: Q4 delegated rights']);
    expect(await titles(soon.id)).toEqual(['Access review opened: Q4 delegated rights']);
    // A day later (the due date moved, not the clock): the reminder, once.
    await sql("UPDATE access_reviews SET due_at = now() + interval '23 hours' WHERE id = $1", [later.id]);
    await notices.sendDue();
    await notices.sendDue();
    expect(await titles(later.id)).toEqual([
      'Access review opened: Q4 delegated rights',
      'Access review due soon: Q4 delegated rights',
    ]);
    expect(await titles(soon.id)).toHaveLength(1);
  });

  it('a campaign named to the 200-character limit still tells its reviewers (the title is cut to the inbox’s 200)', async () => {
    const world = await reviewWorld();
    const name = `Q4 ${'é'.repeat(190)} rights`; // 200 characters; the title's prefix makes it longer
    const review = await opened({ device_ids: [world.device] }, { name });
    await sql("UPDATE access_reviews SET due_at = now() + interval '23 hours' WHERE id = $1", [review.id]);
    await app.t.app.get(AccessReviewNotices).sendDue();
    const told = await sql<{ title: string; body: string }>(
      "SELECT title, body FROM inbox_messages WHERE user_id = $1 AND type = 'access_review' AND data->>'access_review_id' = $2 ORDER BY id",
      [world.owner.user.id, String(review.id)],
    );
    const cut = (prefix: string): string => `${prefix}${[...name].slice(0, 200 - prefix.length - 1).join('')}…`;
    expect(told.map((row) => row.title)).toEqual([cut('Access review opened: '), cut('Access review due soon: ')]);
    expect(told.map((row) => [...row.title].length)).toEqual([200, 200]);
    expect(told[0]?.body).toContain(`Access review ${review.id} is open`);
    const [progress] = await sql<{ open_notices_done: boolean; due_notices_done: boolean }>(
      'SELECT open_notices_done, due_notices_done FROM access_reviews WHERE id = $1',
      [review.id],
    );
    expect(progress).toEqual({ open_notices_done: true, due_notices_done: true });
  });

  it('cancel ends an open campaign with no effect; it cannot be closed or decided after', async () => {
    const world = await reviewWorld();
    const review = await opened({ device_ids: [world.device] }, { default_decision: 'revoke' });
    const [item] = (await itemsOf(review.id)).filter((entry) => entry.revocable);
    await caller(app.t, world.owner)
      .post(`${BASE}/${review.id}/decisions`, { items: [{ item_id: item?.id, decision: 'revoke' }] })
      .expect(200);
    const current = await caller(app.t, app.root).get(`${BASE}/${review.id}`).expect(200);
    await caller(app.t, app.root).post(`${BASE}/${review.id}/cancel`, {}).set('If-Match', '"1"').expect(412);
    const cancelled = await caller(app.t, app.root)
      .post(`${BASE}/${review.id}/cancel`, {})
      .set('If-Match', current.headers.etag as string)
      .expect(200);
    expect(cancelled.body.data).toMatchObject({ state: 'cancelled', result: null });
    for (const action of ['close', 'cancel'])
      expect(
        (await caller(app.t, app.root).post(`${BASE}/${review.id}/${action}`, {}).expect(409)).body.error.details,
      ).toEqual({
        from: 'cancelled',
        action,
      });
    const [live] = await sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM authority_permissions WHERE authority_id = $1 AND revoked_at IS NULL',
      [world.authority],
    );
    expect(live?.n).toBe(2);
    const events = await sql<{ type: string }>(
      "SELECT type FROM events WHERE resource_type = 'access_review' AND resource_id = $1 ORDER BY id",
      [String(review.id)],
    );
    expect(events.at(-1)?.type).toBe('access_review.cancelled');
  });
});
