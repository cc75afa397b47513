import { AuthContextService } from '../../src/access-model/auth-context.service.js';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { AccessExpiryAnnouncer } from '../../src/access/access-expiry-announcer.js';
import { AccessFactsRepository } from '../../src/access-model/access-facts.repository.js';
import { DEFAULT_AUTH_CONTEXT_AUTHORITIES as CARRIED_AUTHORITIES } from '../../src/platform/config/settings.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { accessWorld, askFor } from '../support/access-requests.js';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { sql } from '../support/db.js';
import { createDevice, moreAuthorities } from '../support/devices.js';
import { TEST_JWT_SECRET, testCachePrefix, testDatabaseUrl } from '../support/test-env.js';

interface AccessEvent {
  type: string;
  data: { permission_code: string; device_id: number | null; cause: string };
}

/** The user's access events on the feed (one permission, or all), in commit order. */
const accessEventsOf = (userId: number, code: string | null = null): Promise<AccessEvent[]> =>
  sql<AccessEvent>(
    `SELECT type, data FROM events WHERE type LIKE 'access.%' AND resource_id = $1
       AND ($2::text IS NULL OR data->>'permission_code' = $2) ORDER BY seq, id`,
    [String(userId), code],
  );

/** The same as `gained write`, `lost expired`, … */
const trailOf = async (userId: number, code: string): Promise<string[]> =>
  (await accessEventsOf(userId, code)).map(
    (event) => `${event.type.slice('access.'.length)} ${event.data.cause === 'expired' ? 'expired' : 'write'}`,
  );

/**
 * Sleeps on the database's clock until `instant` has passed by the announcer's settling second (it
 * stays that far behind the clock, so that the history it reads is final).
 */
const untilPast = (instant: string): Promise<unknown> =>
  sql('SELECT pg_sleep(greatest(0, extract(epoch FROM ($1::timestamptz - clock_timestamp()))) + 1.05)', [instant]);

/**
 * Attacks on previews and access-change events (part 6.17), from an independent review: the
 * findings (now fixed) and the attacks that held.
 */
describe('previews and access-change events: attacks', () => {
  let t: TestApp;
  let root: Caller;
  let announcer: AccessExpiryAnnouncer;
  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('access-previews-attacks') });
    root = await actor('super_admin');
    announcer = t.app.get(AccessExpiryAnnouncer);
  });
  afterAll(() => t.close());

  const post = (path: string, body: object = {}, auth = root.auth) =>
    t.http().post(path).set('Authorization', auth).send(body);
  const grant = (userId: number, code: string, expiresAt?: string) =>
    post('/v1/admin/permission-grants/grant', {
      user_id: userId,
      permission_id: permissionId(code),
      ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
    });
  const setRole = (userId: number, roleId: number) =>
    t.http().patch(`/v1/admin/users/${userId}`).set('Authorization', root.auth).send({ role_id: roleId }).expect(200);

  it('a misspelt preview (?DRY_RUN=true, ?dry_run[]=true, ?dryrun=true) is a 400: the revoke never runs', async () => {
    for (const query of ['DRY_RUN=true', 'dry_run[]=true', 'dryrun=true']) {
      const world = await accessWorld(['authorities.read']);
      const answer = await post(`/v1/admin/authorities/${world.authority}/revoke?${query}`);
      const [row] = await sql<{ revoked_at: Date | null }>('SELECT revoked_at FROM authorities WHERE id = $1', [
        world.authority,
      ]);
      expect([query, answer.status, row?.revoked_at ?? null]).toEqual([query, 400, null]);
    }
  });

  it('?dry_run=true on a POST without previews does not lose its Idempotency-Key: written once, replayed', async () => {
    const user = await createUser({ role: 'viewer' });
    const key = `k-${randomUUID()}`;
    const title = `t-${randomUUID()}`;
    const send = () =>
      post('/v1/admin/inbox?dry_run=true', { user_id: user.id, type: 'note', title, body: 'once' }).set(
        'Idempotency-Key',
        key,
      );
    const first = await send();
    const second = await send();
    const rows = await sql('SELECT id FROM inbox_messages WHERE title = $1', [title]);
    // Refused (400, nothing written) or made once and replayed: never twice.
    expect(rows.length).toBeLessThanOrEqual(first.status === 400 ? 0 : 1);
    expect(second.status === 400 || second.headers['idempotent-replayed'] === 'true').toBe(true);
  });

  it('an expiry is judged from the history at its instant, not from the facts of its announcement', async () => {
    const [demoted, regranted, suspended] = await Promise.all([1, 2, 3].map(() => createUser({ role: 'viewer' })));
    if (demoted === undefined || regranted === undefined || suspended === undefined) throw new Error('no users');
    const instant = new Date(Date.now() + 2500).toISOString();
    for (const user of [demoted, regranted, suspended]) await grant(user.id, 'audit.read', instant).expect(201);
    // Admin (audit.read by role) across the instant: the grant's expiry takes nothing then.
    await setRole(demoted.id, 2);
    await untilPast(instant);
    // Before the announcer's next run: a demotion (loses audit.read now, announced by this write),
    // a grant again (after a loss at the instant), a suspension (after that loss, nothing left).
    await setRole(demoted.id, 4);
    await grant(regranted.id, 'audit.read').expect(201);
    await post(`/v1/admin/users/${suspended.id}/suspend`).expect(200);
    await announcer.run();
    const losses = async (userId: number) =>
      (await trailOf(userId, 'audit.read')).filter((step) => step.startsWith('lost')).map((step) => step.slice(5));
    expect({
      demoted: await losses(demoted.id),
      regranted: await losses(regranted.id),
      suspended: await losses(suspended.id),
    }).toEqual({ demoted: ['write'], regranted: ['expired'], suspended: ['expired'] });
  });

  it('an expiry whose write is still under way when the announcer runs is announced once it commits', async () => {
    const holder = await createUser({ role: 'viewer' });
    await announcer.run();
    // Holds the write at its last statements (the projection bump), after its watch and events.
    const lock = new pg.Client({ connectionString: testDatabaseUrl() });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query(
      `INSERT INTO projection_versions (scope, id, version) VALUES ('user', $1, 1)
       ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version`,
      [holder.id],
    );
    const instant = new Date(Date.now() + 1500).toISOString();
    const granting = grant(holder.id, 'audit.read', instant).then((answer) => answer);
    let announcing: Promise<number> | undefined;
    try {
      await untilPast(instant);
      // The grant is not visible yet: the announcer waits for it (the writers' lock) before it
      // reads the clock, rather than moving its mark past an expiry it cannot see.
      const [waiting] = await sql<{ pid: number }>(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' AND granted",
      );
      expect(waiting).toBeDefined();
      announcing = announcer.run();
    } finally {
      await lock.query('ROLLBACK');
      await lock.end();
    }
    expect((await granting).status).toBe(201);
    await announcing;
    await announcer.run();
    expect(await trailOf(holder.id, 'audit.read')).toEqual(['gained write', 'lost expired']);
  });

  it('bootstrap-admin makes a viewer a super_admin and announces what it gained', async () => {
    const viewer = await createUser({ role: 'viewer', status: 'suspended' });
    const env = { DATABASE_URL: testDatabaseUrl(), JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'silent' };
    expect((await runCli(['bootstrap-admin', '--email', viewer.email], env)).code).toBe(0);
    const gained = (await accessEventsOf(viewer.id)).filter((event) => event.type === 'access.gained');
    expect(gained.map((event) => event.data.permission_code)).toContain('cache.rebuild');
  });

  it('a read whose lookup outlives a load begun before a revoke never takes that load: the revoked delegate is refused', async () => {
    const world = await accessWorld(['authorities.read']);
    // A delegate holding more authorities than its auth context carries: decided from the device's
    // set, whose cache-aside read is the one raced here.
    await moreAuthorities(world.operator.user.id, CARRIED_AUTHORITIES);
    await t.app.get(AuthContextService).refreshUser(world.operator.user.id);
    const key = `authz:device:${world.device}`;
    const facts = t.app.get(AccessFactsRepository);
    const entries = t.app.get(CacheEntries);
    const loadSets = facts.deviceAuthoritySets.bind(facts);
    const lookUp = entries.get.bind(entries);
    let hasRead!: () => void;
    const read = new Promise<void>((resolve) => (hasRead = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    facts.deviceAuthoritySets = async (ids) => {
      const sets = await loadSets(ids);
      if (!held && ids.includes(world.device)) {
        held = true;
        hasRead();
        await released;
      }
      return sets;
    };
    const detail = `/v1/admin/authorities/${world.authority}`;
    const asDelegate = () => t.http().get(detail).set('Authorization', world.operator.auth);
    try {
      // R1: its lookup misses; its load reads the set (the delegate live) and is held there.
      const first = asDelegate().then((answer) => answer);
      await read;
      await post(`${detail}/revoke`).expect(200);
      // R2, sent after the revoke answered: its lookup is on the wire (and runs past its budget)
      // while R1's load finishes.
      entries.get = async (asked) => {
        if (asked !== key) return lookUp(asked);
        entries.get = lookUp;
        await lookUp(asked);
        release();
        await first;
        return { ok: false, entry: undefined };
      };
      expect((await asDelegate()).status).toBe(403);
      expect((await first).status).toBe(200);
    } finally {
      facts.deviceAuthoritySets = loadSets;
      entries.get = lookUp;
      release();
    }
  });

  it('a preview of a write on a user needs access.read: a holder of users.suspend alone is refused it', async () => {
    const suspender = await actor('operator');
    await grant(suspender.user.id, 'users.suspend').expect(201);
    const target = await createUser({ role: 'viewer' });
    const device = (await createDevice({ ownerId: target.id })).id;
    await t
      .http()
      .get(`/v1/admin/users/${target.id}/access?permission=devices.update`)
      .set('Authorization', suspender.auth)
      .expect(403);
    const preview = await post(`/v1/admin/users/${target.id}/suspend?dry_run=true`, {}, suspender.auth).expect(403);
    expect(preview.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'access.read' } });
    expect(JSON.stringify(preview.body)).not.toContain(`"device_id":${device}`);
    // The write itself stays the suspender's to make (the route's permission is all it needs).
    await post(`/v1/admin/users/${target.id}/suspend`, {}, suspender.auth).expect(200);
  });

  it('a bulk write is one write: every access change it makes names its first event as the cause', async () => {
    const worlds = [await accessWorld(), await accessWorld()];
    const requestId = `bulk-${randomUUID()}`;
    const items = worlds.map((w) => ({ authority_id: w.authority, permission_id: permissionId('devices.read') }));
    await post('/v1/admin/authority-permissions/bulk-grant', { items }).set('X-Request-Id', requestId).expect(200);
    const rows = await sql<{ id: string; type: string; cause: string | null }>(
      `SELECT lpad(seq::text, 20, '0') || '-' || lpad(id::text, 20, '0') AS id, type, data->>'cause' AS cause
       FROM events WHERE request_id = $1 ORDER BY seq, id`,
      [requestId],
    );
    const first = rows.find((row) => !row.type.startsWith('access.'));
    const gained = rows.filter((row) => row.type === 'access.gained');
    expect(first?.type).toBe('authority_permission.grant');
    expect(gained).toHaveLength(2);
    expect(new Set(gained.map((row) => row.cause))).toEqual(new Set([first?.id]));
  });

  it('held: hostile dry_run values are refused and write nothing; a preview after the write with its key answers afresh', async () => {
    const world = await accessWorld(['authorities.read']);
    const path = `/v1/admin/authorities/${world.authority}/revoke`;
    const revoke = (query: string, key: string) => post(`${path}${query}`, { reason: 'r' }).set('Idempotency-Key', key);
    for (const query of ['?dry_run=true&dry_run=true', '?dry_run=TRUE', '?dry_run=', '?dry_run=1']) {
      const refused = await revoke(query, `k-${randomUUID()}`);
      expect([query, refused.status, refused.body.error?.code]).toEqual([query, 400, 'VALIDATION_FAILED']);
    }
    expect(await sql('SELECT revoked_at FROM authorities WHERE id = $1', [world.authority])).toEqual([
      { revoked_at: null },
    ]);
    const key = `k-${randomUUID()}`;
    const written = await revoke('', key).expect(200);
    const preview = await revoke('?dry_run=true', key).expect(409);
    expect(preview.body.error.code).toBe('INVALID_STATE_TRANSITION');
    expect(preview.headers['idempotent-replayed']).toBeUndefined();
    const replayed = await revoke('', key).expect(200);
    expect([replayed.headers['idempotent-replayed'], replayed.body.data]).toEqual(['true', written.body.data]);
  });

  it('held: previews of an approval and a suspension leave no message, push job, decision or session revocation', async () => {
    const world = await accessWorld();
    const asked = await post(
      '/v1/admin/access-requests',
      askFor(world, 'authorities.revoke'),
      world.operator.auth,
    ).expect(201);
    const traces = async () =>
      sql(
        `SELECT (SELECT count(*) FROM inbox_messages WHERE user_id = $1)::int AS messages,
                (SELECT count(*) FROM ${t.settings.jobsSchema}.job WHERE name = 'send-push' AND data->>'created_by' = $2)::int AS jobs,
                (SELECT state FROM access_requests WHERE id = $3) AS state,
                (SELECT count(*) FROM auth_sessions WHERE user_id = $1 AND revoked_at IS NOT NULL)::int AS revoked`,
        [world.operator.user.id, String(world.owner.user.id), asked.body.data.id],
      );
    const before = await traces();
    const approve = `/v1/admin/access-requests/${asked.body.data.id}/approve?dry_run=true`;
    const preview = await post(approve, {}, world.owner.auth).expect(200);
    expect(preview.body.data.outcome.state).toBe('approved');
    await post(`/v1/admin/users/${world.operator.user.id}/suspend?dry_run=true`).expect(200);
    expect(await traces()).toEqual(before);
    const own = `/v1/admin/access-requests/${asked.body.data.id}`;
    await t.http().get(own).set('Authorization', world.operator.auth).expect(200);
  });

  it('held: previews racing the write on one authority: no 5xx, no deadlock, one revoke announced once', async () => {
    const world = await accessWorld(['authorities.read', 'devices.read']);
    const path = `/v1/admin/authorities/${world.authority}/revoke`;
    const answers = await Promise.all(
      ['', '?dry_run=true', '?dry_run=true', '?dry_run=true'].map((q) => post(path + q)),
    );
    expect(answers[0]?.status).toBe(200);
    for (const answer of answers.slice(1)) expect([200, 409]).toContain(answer.status);
    const lost = (await accessEventsOf(world.operator.user.id)).filter((event) => event.type === 'access.lost');
    expect(lost.map((event) => event.data.permission_code).sort()).toEqual(['authorities.read', 'devices.read']);
  });

  it('held: two announcers at once announce an expiry once; activations and restores announce what they give back', async () => {
    const holder = await createUser({ role: 'viewer' });
    const instant = new Date(Date.now() + 1500).toISOString();
    await grant(holder.id, 'audit.read', instant).expect(201);
    await untilPast(instant);
    await Promise.all([announcer.run(), announcer.run()]);
    expect(await trailOf(holder.id, 'audit.read')).toEqual(['gained write', 'lost expired']);
    const world = await accessWorld(['authorities.read']);
    const gainedBy = async (method: 'post' | 'delete', path: string): Promise<string[]> => {
      const requestId = `w-${randomUUID()}`;
      await t.http()[method](path).set('Authorization', root.auth).set('X-Request-Id', requestId).send({}).expect(200);
      const rows = await sql<{ code: string }>(
        "SELECT data->>'permission_code' AS code FROM events WHERE request_id = $1 AND type = 'access.gained'",
        [requestId],
      );
      return rows.map((row) => row.code);
    };
    const user = `/v1/admin/users/${world.operator.user.id}`;
    const authority = `/v1/admin/authorities/${world.authority}`;
    await gainedBy('post', `${user}/suspend`);
    expect(await gainedBy('post', `${user}/activate`)).toContain('authorities.read');
    await gainedBy('delete', user);
    expect(await gainedBy('post', `${user}/restore`)).toContain('authorities.read');
    await gainedBy('post', `${authority}/deactivate`);
    expect(await gainedBy('post', `${authority}/activate`)).toEqual(['authorities.read']);
    await gainedBy('delete', authority);
    expect(await gainedBy('post', `${authority}/restore`)).toEqual(['authorities.read']);
  });
});
