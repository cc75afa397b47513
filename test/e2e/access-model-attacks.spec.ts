import { jest } from '@jest/globals';
import { DEFAULT_AUTH_CONTEXT_AUTHORITIES as CARRIED_AUTHORITIES } from '../../src/platform/config/settings.js';
import { DeviceAuthoritiesService } from '../../src/access-model/device-authorities.service.js';
import { AccessReviewClose } from '../../src/access-reviews/access-review-close.js';
import { AccessReviewSnapshot } from '../../src/access-reviews/access-review-snapshot.js';
import { AuthoritiesService } from '../../src/authorities/authorities.service.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { runInRequestContext } from '../../src/platform/http/request-context.js';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import {
  carriedAuthorities,
  createAuthority,
  createDevice,
  deviceWithAuthorities,
  moreAuthorities,
} from '../support/devices.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

/*
 * An independent red-team review of issue 39 (the carried authorities, tx.actor, the access
 * model's move), kept as tests: every test fails if the defect it names exists. Its attacks on the
 * layers rule are in test/unit/layers-rule.spec.ts.
 */

const AUTH = '/v1/admin/authorities';
const PERMS = '/v1/admin/authority-permissions';
const REVIEWS = '/v1/admin/access-reviews';

/** The service's clock (it runs in this process), before any test moves it. */
const realNow = Date.now;

/**
 * Moves the service's clock just past `instant` (restored after each test): an expiry is judged
 * at each decision, so the test needs no wait for the instant to come.
 */
function pastTheInstant(instant: number): void {
  jest.spyOn(Date, 'now').mockImplementation(() => Math.max(realNow(), instant + 1));
}

const deviceWith = (operator: Caller, permissions: string[]) => deviceWithAuthorities(operator.user.id, permissions);

/** The authority's permission was revoked by `actorId`: its `revoked_by` and its audit event's actor. */
async function expectRevokedBy(authorityId: number, actorId: number): Promise<void> {
  const [row] = await sql<{ id: string; revoked_by: string }>(
    'SELECT id, revoked_by FROM authority_permissions WHERE authority_id = $1',
    [authorityId],
  );
  expect(Number(row?.revoked_by)).toBe(actorId);
  const [audit] = await sql<{ actor_id: string }>(
    "SELECT actor_id FROM audit_events WHERE action = 'authority_permission.revoke' AND resource_id = $1",
    [String(row?.id)],
  );
  expect(Number(audit?.actor_id)).toBe(actorId);
}

async function userVersion(userId: number): Promise<number> {
  const [row] = await sql<{ version: string }>(
    "SELECT coalesce((SELECT version FROM projection_versions WHERE scope = 'user' AND id = $1), 1) AS version",
    [userId],
  );
  return Number(row?.version);
}

const carriedIn = (t: TestApp, userId: number) => carriedAuthorities(t.app.get(CacheEntries), userId);

/** Reads the target twice (the second from the stored answer), both 200. */
async function warm(t: TestApp, who: Caller, path: string): Promise<void> {
  await caller(t, who).get(path).expect(200);
  await caller(t, who).get(path).expect(200);
}

describe('review 39: stale allows from the carried authorities', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('review-39') });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  it('revoking the operator’s own authority refuses the next stored read of the authority and of the device', async () => {
    const operator = await actor('operator');
    const { device, target, own } = await deviceWith(operator, ['authorities.read', 'devices.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    await warm(t, operator, `/v1/admin/devices/${device}`);
    await caller(t, root).post(`${AUTH}/${own}/revoke`, { reason: 'gone' }).expect(200);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
    await caller(t, operator).get(`/v1/admin/devices/${device}`).expect(403);
    const [row] = await sql<{ revoked_by: string }>('SELECT revoked_by FROM authorities WHERE id = $1', [own]);
    expect(Number(row?.revoked_by)).toBe(root.user.id);
    const [audit] = await sql<{ actor_id: string }>(
      "SELECT actor_id FROM audit_events WHERE action = 'authority.revoke' AND resource_id = $1",
      [String(own)],
    );
    expect(Number(audit?.actor_id)).toBe(root.user.id);
  });

  it('deleting the operator’s own authority refuses the next read', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const res = await caller(t, root).delete(`${AUTH}/${own}`);
    expect([200, 204]).toContain(res.status);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
    const [row] = await sql<{ deleted_by: string }>('SELECT deleted_by FROM authorities WHERE id = $1', [own]);
    expect(Number(row?.deleted_by)).toBe(root.user.id);
  });

  it('an expiry set through PATCH ends the carried right at its instant', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const at = new Date(Date.now() + 1500).toISOString();
    await caller(t, root).patch(`${AUTH}/${own}`, { expires_at: at }).expect(200);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(200);
    pastTheInstant(Date.parse(at));
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
  });

  it('an authority permission that expires (no write marks it) stops allowing from the carried set', async () => {
    const operator = await actor('operator');
    const device = await createDevice();
    const target = await createAuthority(device.id, (await createUser()).id);
    const own = await createAuthority(device.id, operator.user.id);
    await sql(
      `INSERT INTO authority_permissions (authority_id, permission_id, expires_at) VALUES ($1, $2, now() + interval '1500 milliseconds')`,
      [own, permissionId('authorities.read')],
    );
    await warm(t, operator, `${AUTH}/${target}`);
    pastTheInstant(realNow() + 1500);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
  });

  it('a synchronous bulk revoke refuses the next read; its stamps and audit name the requester', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const res = await caller(t, root)
      .post(`${PERMS}/bulk-revoke`, { items: [{ authority_id: own, permission_id: permissionId('authorities.read') }] })
      .expect(200);
    expect(res.body.data.results[0].status).toBe('revoked');
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
    await expectRevokedBy(own, root.user.id);
  });

  it('previews (revoke ?dry_run=true, bulk dry_run) change nothing: the right stays, no version moves, the context is unchanged', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const before = await userVersion(operator.user.id);
    const carried = await carriedIn(t, operator.user.id);
    await caller(t, root).post(`${AUTH}/${own}/revoke?dry_run=true`, { reason: 'preview' }).expect(200);
    await caller(t, root)
      .post(`${PERMS}/bulk-revoke`, {
        items: [{ authority_id: own, permission_id: permissionId('authorities.read') }],
        dry_run: true,
      })
      .expect(200);
    await caller(t, root).delete(`${AUTH}/${own}?dry_run=true`);
    expect(await userVersion(operator.user.id)).toBe(before);
    expect(await carriedIn(t, operator.user.id)).toEqual(carried);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(200);
    const [row] = await sql<{ revoked_at: unknown; is_deleted: boolean }>(
      'SELECT revoked_at, is_deleted FROM authorities WHERE id = $1',
      [own],
    );
    expect(row).toEqual({ revoked_at: null, is_deleted: false });
  });

  it('a transfer away from an operator owner takes its owner right at once (kept access or not)', async () => {
    for (const keep of [true, false]) {
      const owner = await actor('operator');
      const next = await createUser({ role: 'operator' });
      const device = await createDevice({ ownerId: owner.user.id });
      const other = await createAuthority(device.id, (await createUser()).id);
      await warm(t, owner, `/v1/admin/devices/${device.id}`);
      await warm(t, owner, `${AUTH}/${other}`);
      await caller(t, root)
        .post(`/v1/admin/devices/${device.id}/transfer-owner`, {
          new_owner_user_id: next.id,
          keep_previous_owner_access: keep,
        })
        .expect(200);
      await caller(t, owner).get(`/v1/admin/devices/${device.id}`).expect(403);
      await caller(t, owner).get(`${AUTH}/${other}`).expect(403);
    }
  });

  it('suspending or deleting the operator ends its session’s rights at once', async () => {
    const operator = await actor('operator');
    const { target } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    await caller(t, root).post(`/v1/admin/users/${operator.user.id}/suspend`, { reason: 'x' }).expect(200);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(401);
  });

  it('the stored answer never serves another device’s record, a deleted record or a query string to a device-scoped reader', async () => {
    const operator = await actor('operator');
    const mine = await deviceWith(operator, ['authorities.read', 'devices.read']);
    const elsewhere = await createDevice();
    const foreign = await createAuthority(elsewhere.id, (await createUser()).id);
    // The root warms the foreign entries (so they are prefetched hits for the operator's requests).
    await caller(t, root).get(`${AUTH}/${foreign}`).expect(200);
    await caller(t, root).get(`/v1/admin/devices/${elsewhere.id}`).expect(200);
    await caller(t, operator).get(`${AUTH}/${foreign}`).expect(403);
    await caller(t, operator).get(`/v1/admin/devices/${elsewhere.id}`).expect(403);
    await caller(t, operator).get(`${AUTH}/${foreign}?include_deleted=true`).expect(403);
    // An expired authority permission on the other device: carried, but allowing nothing.
    const expiredOwn = await createAuthority(elsewhere.id, operator.user.id);
    await sql(
      `INSERT INTO authority_permissions (authority_id, permission_id, expires_at) VALUES ($1, $2, now() + interval '300 milliseconds')`,
      [expiredOwn, permissionId('authorities.read')],
    );
    await caller(t, root).post(`${AUTH}/${expiredOwn}/deactivate`, {}).expect(200);
    await caller(t, root).post(`${AUTH}/${expiredOwn}/activate`, {}).expect(200);
    pastTheInstant(realNow() + 300);
    await caller(t, operator).get(`${AUTH}/${foreign}`).expect(403);
    // A deleted record of the operator's own device is a 404, not the stored entry.
    await warm(t, operator, `${AUTH}/${mine.target}`);
    const res = await caller(t, root).delete(`${AUTH}/${mine.target}`);
    expect([200, 204]).toContain(res.status);
    await caller(t, operator).get(`${AUTH}/${mine.target}`).expect(404);
  });

  it('a delegation judged from a stale carried right is refused after the revoke', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read', 'authority_permissions.grant']);
    await warm(t, operator, `${AUTH}/${target}`);
    const granted = await sql<{ id: string }>(
      `SELECT ap.id FROM authority_permissions ap WHERE ap.authority_id = $1 AND ap.permission_id = $2`,
      [own, permissionId('authorities.read')],
    );
    await caller(t, root).delete(`${PERMS}/${granted[0]?.id}`).expect(200);
    const res = await caller(t, operator)
      .post(PERMS, { authority_id: target, permission_id: permissionId('authorities.read') })
      .expect(403);
    expect(res.body.error.code).toBe('DELEGATION_FORBIDDEN');
  });

  it(`exactly ${CARRIED_AUTHORITIES} authorities are carried and ${CARRIED_AUTHORITIES + 1} are not; a revoke is honoured either way`, async () => {
    for (const extra of [CARRIED_AUTHORITIES - 1, CARRIED_AUTHORITIES]) {
      const operator = await actor('operator');
      const { target, own } = await deviceWith(operator, ['authorities.read']);
      await moreAuthorities(operator.user.id, extra);
      await warm(t, operator, `${AUTH}/${target}`);
      const carried = await carriedIn(t, operator.user.id);
      if (extra + 1 <= CARRIED_AUTHORITIES) expect(carried).toHaveLength(CARRIED_AUTHORITIES);
      else expect(carried).toBeNull();
      await caller(t, root).post(`${AUTH}/${own}/revoke`, {}).expect(200);
      await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
      // One fewer live authority: now carried when it had been one too many.
      const after = await carriedIn(t, operator.user.id);
      expect(after === null ? null : (after as unknown[]).length).toBe(
        extra + 1 - 1 <= CARRIED_AUTHORITIES ? extra : null,
      );
    }
  });

  it('a cached auth entry in the old shape (no authorities) is not trusted: reloaded in the new shape', async () => {
    const operator = await actor('operator');
    const { target } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const entries = t.app.get(CacheEntries);
    const key = `auth:user:${operator.user.id}`;
    const { entry } = await entries.get(key);
    if (entry === undefined) throw new Error('no entry');
    const { authorities: _dropped, ...old } = JSON.parse(entry.json) as Record<string, unknown>;
    await entries.put(key, { ...entry, json: JSON.stringify(old) }, true);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(200);
    expect(await carriedIn(t, operator.user.id)).toEqual([expect.objectContaining({ user_id: operator.user.id })]);
  });

  it('reads racing a revoke: every read that starts after the revoke answered is refused', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const racing = Array.from({ length: 8 }, () =>
      caller(t, operator)
        .get(`${AUTH}/${target}`)
        .then((r) => r.status),
    );
    await caller(t, root).post(`${AUTH}/${own}/deactivate`, {}).expect(200);
    const statuses = await Promise.all(racing);
    for (const status of statuses) expect([200, 403]).toContain(status);
    const after = await Promise.all(
      Array.from({ length: 8 }, () =>
        caller(t, operator)
          .get(`${AUTH}/${target}`)
          .then((r) => r.status),
      ),
    );
    expect(after).toEqual(Array(8).fill(403));
  });

  it('/authz/check for the operator follows the revoke at once', async () => {
    const operator = await actor('operator');
    const { device, target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const ask = `/v1/admin/authz/check?user_id=${operator.user.id}&permission=authorities.read&device_id=${device}`;
    expect((await caller(t, root).get(ask).expect(200)).body.data.allowed).toBe(true);
    await caller(t, root).post(`${AUTH}/${own}/revoke`, {}).expect(200);
    expect((await caller(t, root).get(ask).expect(200)).body.data.allowed).toBe(false);
  });

  it('an approved access request is allowed (device set fallback), and its revoke is honoured', async () => {
    const owner = await actor('operator');
    const requester = await actor('operator');
    const device = await createDevice({ ownerId: owner.user.id });
    const target = await createAuthority(device.id, (await createUser()).id);
    await createAuthority(device.id, requester.user.id);
    await caller(t, requester).get(`${AUTH}/${target}`).expect(403);
    const asked = await caller(t, requester)
      .post('/v1/admin/access-requests', {
        device_id: device.id,
        permission_id: permissionId('authorities.read'),
        reason: 'night shift',
        duration_seconds: 3600,
      })
      .expect(201);
    const approved = await caller(t, owner)
      .post(`/v1/admin/access-requests/${asked.body.data.id}/approve`, { reason: 'ok' })
      .expect(200);
    expect(Number(approved.body.data.decided_by)).toBe(owner.user.id);
    await warm(t, requester, `${AUTH}/${target}`);
    const apId = approved.body.data.authority_permission_id;
    const [ap] = await sql<{ granted_by: string }>('SELECT granted_by FROM authority_permissions WHERE id = $1', [
      apId,
    ]);
    expect(Number(ap?.granted_by)).toBe(owner.user.id);
    await caller(t, root).delete(`${PERMS}/${apId}`).expect(200);
    await caller(t, requester).get(`${AUTH}/${target}`).expect(403);
  });

  /** A campaign over the user (default revoke), snapshotted, whose close root asked for: its steps are the test's. */
  async function closeRequested(userId: number, name: string) {
    const opened = await caller(t, root)
      .post(REVIEWS, {
        name,
        scope: { user_ids: [userId] },
        default_decision: 'revoke',
        due_at: new Date(Date.now() + 7 * 86_400_000).toISOString(),
      })
      .expect(202);
    const id: number = opened.body.data.id;
    await t.app.get(AccessReviewSnapshot).take(id);
    await caller(t, root).post(`${REVIEWS}/${id}/close`, {}).expect(202);
    return { id, closing: t.app.get(AccessReviewClose) };
  }

  it('an access review close revokes the carried right at once; revoked_by and the audit actor are the closer', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const { id, closing } = await closeRequested(operator.user.id, 'review 39');
    for (;;) {
      const step = await runInRequestContext({ request_id: 'review-39', ip: 'job', actor_id: root.user.id }, () =>
        closing.step(id, root.user.id),
      );
      if (step !== 'more') break;
    }
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
    await expectRevokedBy(own, root.user.id);
  });

  // tx.actor claims to be "who writes (the stamps' *_by, audit and events)": a step run with its
  // closer but outside a request context (as run() is the only caller to set one up) stamps the
  // revocation with the closer and the audit/feed events with nobody.
  it('the close step’s closer (uow.run({ actor })) is the audit actor too, not only the *_by stamp', async () => {
    const operator = await actor('operator');
    const { own } = await deviceWith(operator, ['authorities.read']);
    const { id, closing } = await closeRequested(operator.user.id, 'review 39 actor');
    while ((await closing.step(id, root.user.id)) === 'more');
    const [row] = await sql<{ id: string; revoked_by: string }>(
      'SELECT id, revoked_by FROM authority_permissions WHERE authority_id = $1',
      [own],
    );
    expect(Number(row?.revoked_by)).toBe(root.user.id);
    const audits = await sql<{ action: string; actor_id: string | null }>(
      `SELECT action, actor_id FROM audit_events
       WHERE (action = 'authority_permission.revoke' AND resource_id = $1) OR (action = 'access_review.closed' AND resource_id = $2)`,
      [String(row?.id), String(id)],
    );
    expect(
      audits.map((audit) => [audit.action, audit.actor_id === null ? null : Number(audit.actor_id)]).sort(),
    ).toEqual([
      ['access_review.closed', root.user.id],
      ['authority_permission.revoke', root.user.id],
    ]);
  });

  // A rolling deploy: an instance of the previous release revokes an authority the way it did
  // (the device's set bumped and rebuilt; it knows nothing of the holder's carried context). With
  // carried authorities on, the new release's instances would allow from the carried copy until the
  // entry expires; the upgrade runs its first step with AUTH_CONTEXT_AUTHORITIES=0 (docs/operations.md),
  // which this app does, and turns it on once no instance of the previous release runs.
  it('a revoke written by the previous release (device set rebuilt, holder context untouched) is honoured during the upgrade', async () => {
    const upgrading = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('review-39-upgrade'),
      env: { AUTH_CONTEXT_AUTHORITIES: '0' },
    });
    try {
      await revokedByThePreviousRelease(upgrading);
    } finally {
      await upgrading.close();
    }
  });

  async function revokedByThePreviousRelease(t: TestApp): Promise<void> {
    const operator = await actor('operator');
    const { device, target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    await sql(
      `UPDATE authorities SET revoked_at = now(), is_active = false, revoke_reason = 'old release' WHERE id = $1`,
      [own],
    );
    await sql(
      `INSERT INTO projection_versions (scope, id, version) VALUES ('device', $1, 2)
       ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version + 1`,
      [device],
    );
    await t.app.get(DeviceAuthoritiesService).refresh([device]);
    expect(await t.app.get(DeviceAuthoritiesService).forDevice(device)).not.toContainEqual(
      expect.objectContaining({ id: own }),
    );
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
  }

  it('the stored answer for an allowed operator skips the handler (sanity of the fast path under attack)', async () => {
    const operator = await actor('operator');
    const { target } = await deviceWith(operator, ['authorities.read']);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(200);
    const handler = jest.spyOn(t.app.get(AuthoritiesService), 'get');
    await caller(t, operator).get(`${AUTH}/${target}`).expect(200);
    expect(handler).not.toHaveBeenCalled();
  });
});

describe('review 39: an asynchronous bulk revoke (job) refuses the next read', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('review-39-jobs'),
      env: { JOBS_SCHEMA: jobsSchema(), JOB_WORKERS: 'true' },
    });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('Prefer: respond-async bulk revoke: 403 after the job, stamps and audit name the requester', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    const accepted = await caller(t, root)
      .post(`${PERMS}/bulk-revoke`, { items: [{ authority_id: own, permission_id: permissionId('authorities.read') }] })
      .set('Prefer', 'respond-async')
      .expect(202);
    const job = await waitForJob(t, root.auth, accepted.body.data.job_id);
    expect(job.state).toBe('succeeded');
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
    await expectRevokedBy(own, root.user.id);
  });
});

describe.each([
  ['the in-process cache (no Redis)', null],
  ['an unreachable Redis', 'redis://127.0.0.1:1/0'],
])('review 39: with %s, a revoke is honoured at once', (_name, redisUrl) => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl, env: { CACHE_TIMEOUT_MS: '200' } });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('revoke, then read: 403', async () => {
    const operator = await actor('operator');
    const { device, target, own } = await deviceWith(operator, ['authorities.read', 'devices.read']);
    await warm(t, operator, `${AUTH}/${target}`);
    await warm(t, operator, `/v1/admin/devices/${device}`);
    await caller(t, root).post(`${AUTH}/${own}/revoke`, {}).expect(200);
    await caller(t, operator).get(`${AUTH}/${target}`).expect(403);
    await caller(t, operator).get(`/v1/admin/devices/${device}`).expect(403);
  });
});
