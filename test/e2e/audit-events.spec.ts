import { randomUUID } from 'node:crypto';
import { actor, createSession, createUser, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';

interface Who {
  readonly user: TestUser;
  readonly auth: string;
}

interface Event {
  id: number;
  occurred_at: string;
  actor_id: number | null;
  action: string;
  resource_type: string;
  resource_id: number | string | null;
  request_id: string | null;
  reason: string | null;
  changes: Record<string, unknown>;
}

describe('the audit trail over the API: GET /audit-events (part 6.10)', () => {
  let t: TestApp;
  let root: Who;
  let writer: Who;
  const requestIds = [`audit-${randomUUID()}`, `audit-${randomUUID()}`, `audit-${randomUUID()}`];
  let created: { id: number };

  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
    // A writer of its own, so its events can be counted exactly.
    writer = await actor('admin');
    const email = `audited-${randomUUID().slice(0, 8)}@example.com`;
    created = (
      await caller(t, writer)
        .post('/v1/admin/users', { email, display_name: 'Audited', role_id: 4 })
        .set('X-Request-Id', requestIds[0] ?? '')
        .expect(201)
    ).body.data;
    await caller(t, writer)
      .patch(`/v1/admin/users/${created.id}`, { display_name: 'Audited twice' })
      .set('X-Request-Id', requestIds[1] ?? '')
      .expect(200);
    await caller(t, writer)
      .post(`/v1/admin/users/${created.id}/suspend`, { reason: 'left the team' })
      .set('X-Request-Id', requestIds[2] ?? '')
      .expect(200);
  });
  afterAll(() => t.close());

  const list = async (query: string): Promise<Event[]> =>
    (await caller(t, root).get(`/v1/admin/audit-events?${query}`).expect(200)).body.data as Event[];

  it('the attack: the trail is readable by audit.read (admin, super_admin) and by nobody else', async () => {
    await caller(t, root).get('/v1/admin/audit-events').expect(200);
    await caller(t, writer).get('/v1/admin/audit-events').expect(200);
    for (const role of ['viewer', 'operator'] as const) {
      const refused = await caller(t, await actor(role))
        .get('/v1/admin/audit-events')
        .expect(403);
      expect(refused.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'audit.read' } });
    }
    await caller(t, await actor('viewer'))
      .get('/v1/admin/audit-events/1')
      .expect(403);
  });

  it('returns each event with the contract fields; filters by request_id, actor_id, action, resource', async () => {
    const [event] = await list(`request_id=${requestIds[0]}`);
    expect(Object.keys(event ?? {})).toEqual([
      'id',
      'occurred_at',
      'actor_id',
      'action',
      'resource_type',
      'resource_id',
      'request_id',
      'reason',
      'changes',
    ]);
    expect(event).toMatchObject({
      actor_id: writer.user.id,
      action: 'user.create',
      resource_type: 'user',
      resource_id: created.id,
      request_id: requestIds[0],
      reason: null,
    });
    expect(event?.changes).toMatchObject({ display_name: [null, 'Audited'], role_id: [null, 4] });
    expect(event?.occurred_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const mine = await list(`actor_id=${writer.user.id}`);
    expect(mine.map((row) => row.action)).toEqual(['user.suspend', 'user.update', 'user.create']);
    expect(mine[0]).toMatchObject({ reason: 'left the team', changes: { status_id: [1, 3] } });
    expect((await list(`actor_id=${writer.user.id}&sort=id:asc`)).map((row) => row.action)).toEqual([
      'user.create',
      'user.update',
      'user.suspend',
    ]);
    expect((await list(`actor_id=${writer.user.id}&action=user.update`)).map((row) => row.request_id)).toEqual([
      requestIds[1],
    ]);
    expect((await list(`resource_type=user&resource_id=${created.id}`)).map((row) => row.action)).toEqual([
      'user.suspend',
      'user.update',
      'user.create',
    ]);
    const total = await caller(t, root)
      .get(`/v1/admin/audit-events?actor_id=${writer.user.id}&page_size=2`)
      .expect(200);
    expect(total.body.meta).toMatchObject({ page: 1, page_size: 2, total: 3, total_exact: true });
  });

  it('filters by time (occurred_after and occurred_before are exclusive) and shows session ids as strings', async () => {
    const all = await list(`actor_id=${writer.user.id}&sort=id:asc`);
    const middle = all[1]?.occurred_at ?? '';
    expect(
      (await list(`actor_id=${writer.user.id}&occurred_after=${encodeURIComponent(middle)}`)).map((row) => row.action),
    ).toEqual(['user.suspend']);
    expect(
      (await list(`actor_id=${writer.user.id}&occurred_before=${encodeURIComponent(middle)}`)).map((row) => row.action),
    ).toEqual(['user.create']);
    expect(await list(`actor_id=${writer.user.id}&occurred_after=2999-01-01T00:00:00Z`)).toEqual([]);

    const holder = await createUser({ role: 'operator' });
    const session = await createSession(holder.id);
    await caller(t, root).post(`/v1/admin/users/${holder.id}/revoke-sessions`).expect(200);
    const [revoked] = await list(`resource_type=session&resource_id=${session}`);
    expect(revoked).toMatchObject({ action: 'session.revoke', resource_type: 'session', resource_id: session });
  });

  it('GET /audit-events/{id}: the event, cached, with ETag; 404 AUDIT_EVENT_NOT_FOUND; ids in plain decimal only', async () => {
    const [event] = await list(`request_id=${requestIds[2]}`);
    const first = await caller(t, root).get(`/v1/admin/audit-events/${event?.id}`).expect(200);
    expect(first.body.data).toEqual(event);
    expect(first.headers.etag).toBe('"1"');
    const second = await caller(t, root).get(`/v1/admin/audit-events/${event?.id}`).expect(200);
    expect(second.body.meta.cache).toBe('hit');
    const missing = await caller(t, root).get('/v1/admin/audit-events/987654321').expect(404);
    expect(missing.body.error).toEqual({
      code: 'AUDIT_EVENT_NOT_FOUND',
      message: 'Audit event 987654321 does not exist',
      details: { audit_event_id: 987654321 },
    });
    for (const id of ['01', '0x1', '1.0', '%201', '-1', '99999999999999999']) {
      expect((await caller(t, root).get(`/v1/admin/audit-events/${id}`).expect(400)).body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: { fields: [{ field: 'id' }] },
      });
    }
  });

  it('400 for bad filter values and unknown parameters, all reported at once', async () => {
    const response = await caller(t, root)
      .get('/v1/admin/audit-events?actor_id=abc&occurred_after=yesterday&sort=action:asc&verb=x')
      .expect(400);
    expect(response.body.error.details.fields.map((field: { field: string }) => field.field).sort()).toEqual([
      'actor_id',
      'occurred_after',
      'sort',
      'verb',
    ]);
    expect(
      (await caller(t, root).get('/v1/admin/audit-events?include_deleted=true').expect(400)).body.error.details
        .fields[0].field,
    ).toBe('include_deleted');
    // Timestamps the database would refuse (or read differently) never reach it; NUL never does either.
    for (const [name, value] of [
      ['occurred_after', '2026-02-30T00:00:00Z'],
      ['occurred_after', '1'],
      ['occurred_before', '2026'],
      ['occurred_before', 'March 7'],
      ['occurred_before', '+275760-09-13T00:00:00.000Z'],
      ['occurred_after', '12/31/2026'],
      ['occurred_after', '2026-01-01T00:00:00'],
      ['occurred_after', '2026-01-01T24:00:00Z'],
      ['action', 'user.create\u0000'],
      ['request_id', 'a\u0000b'],
    ]) {
      const refused = await caller(t, root)
        .get(`/v1/admin/audit-events?${name}=${encodeURIComponent(value ?? '')}`)
        .expect(400);
      expect(refused.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { fields: [{ field: name }] } });
    }
    for (const value of ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00.123456+01:00', '2026-01-01T00:00+0530']) {
      await caller(t, root)
        .get(`/v1/admin/audit-events?occurred_after=${encodeURIComponent(value)}&page_size=1`)
        .expect(200);
    }
    expect(await sql('SELECT 1 FROM audit_events LIMIT 1')).toHaveLength(1);
  });
});
