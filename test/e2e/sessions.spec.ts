import { actor, createSession, createUser, signToken, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';

interface Who {
  readonly user: TestUser;
  readonly auth: string;
}

const bearer = (userId: number, sessionId: string): { auth: string } => ({
  auth: `Bearer ${signToken({ sub: String(userId), sid: sessionId })}`,
});

describe("a user's sessions: list and revoke-sessions (part 6.1)", () => {
  let a: TestApp;
  let b: TestApp;
  let root: Who;
  beforeAll(async () => {
    // Two instances sharing PostgreSQL and Redis, as behind a load balancer.
    a = await startApp({ widgets: false });
    b = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('lists sessions newest first with the contract fields and never a token', async () => {
    const user = await createUser({ role: 'operator' });
    const older = await createSession(user.id, 3600);
    await sql("UPDATE auth_sessions SET created_at = now() - interval '1 hour' WHERE id = $1", [older]);
    const expired = await createSession(user.id, 3600);
    await sql(
      "UPDATE auth_sessions SET created_at = now() - interval '2 hours', expires_at = now() - interval '1 minute' WHERE id = $1",
      [expired],
    );
    const newest = await createSession(user.id, 3600);
    const response = await caller(a, root).get(`/v1/admin/users/${user.id}/sessions`).expect(200);
    expect(response.body.data.map((row: { id: string }) => row.id)).toEqual([newest, older, expired]);
    expect(Object.keys(response.body.data[0])).toEqual([
      'id',
      'user_id',
      'created_at',
      'expires_at',
      'revoked_at',
      'revoked_by',
      'revoke_reason',
      'is_active',
    ]);
    expect(response.body.data.map((row: { is_active: boolean }) => row.is_active)).toEqual([true, true, false]);
    expect(response.body.meta).toMatchObject({ page: 1, page_size: 25, total: 3, total_exact: true });
    expect(JSON.stringify(response.body)).not.toMatch(/eyJ/);
    const paged = await caller(a, root)
      .get(`/v1/admin/users/${user.id}/sessions?page=2&page_size=2&sort=created_at:desc`)
      .expect(200);
    expect(paged.body.data.map((row: { id: string }) => row.id)).toEqual([expired]);
  });

  it('400 for an unknown parameter or sort, 404 for an unknown user, a deleted user stays readable; a viewer may read', async () => {
    const user = await createUser();
    expect(
      (await caller(a, root).get(`/v1/admin/users/${user.id}/sessions?status=live`).expect(400)).body.error.details
        .fields[0],
    ).toMatchObject({ field: 'status', rule: 'unknown' });
    expect(
      (await caller(a, root).get(`/v1/admin/users/${user.id}/sessions?sort=token:asc`).expect(400)).body.error.code,
    ).toBe('VALIDATION_FAILED');
    expect((await caller(a, root).get('/v1/admin/users/987654321/sessions').expect(404)).body.error).toMatchObject({
      code: 'USER_NOT_FOUND',
      details: { user_id: 987654321 },
    });
    await createSession(user.id);
    await caller(a, root).delete(`/v1/admin/users/${user.id}`).expect(200);
    const deleted = await caller(a, root).get(`/v1/admin/users/${user.id}/sessions`).expect(200);
    expect(deleted.body.data).toEqual([
      expect.objectContaining({ is_active: false, revoke_reason: 'user deleted', revoked_by: root.user.id }),
    ]);
    const viewer = await actor('viewer');
    await caller(a, viewer).get(`/v1/admin/users/${user.id}/sessions`).expect(200);
  });

  it('revokes every live session: the count, one audit event each, refused on every instance on the next request', async () => {
    const target = await createUser({ role: 'operator' });
    const first = await createSession(target.id);
    const second = await createSession(target.id);
    const already = await createSession(target.id);
    await sql("UPDATE auth_sessions SET revoked_at = now(), revoke_reason = 'earlier' WHERE id = $1", [already]);
    // Warm both instances' view of the sessions.
    await caller(a, bearer(target.id, first)).get('/v1/admin/users?page_size=1').expect(200);
    await caller(b, bearer(target.id, second)).get('/v1/admin/users?page_size=1').expect(200);

    const admin = await actor('admin');
    const response = await caller(a, admin)
      .post(`/v1/admin/users/${target.id}/revoke-sessions`, { reason: 'lost laptop' })
      .expect(200);
    expect(response.body.data).toEqual({ user_id: target.id, revoked: 2 });
    for (const [app, session] of [
      [a, first],
      [b, first],
      [a, second],
      [b, second],
    ] as const) {
      const refused = await caller(app, bearer(target.id, session)).get('/v1/admin/users?page_size=1').expect(401);
      expect(refused.body.error).toMatchObject({
        code: 'AUTH_SESSION_INVALID',
        details: { reason: 'session_revoked' },
      });
    }
    const rows = await sql<{ id: string; revoked_by: number; revoke_reason: string }>(
      'SELECT id, revoked_by, revoke_reason FROM auth_sessions WHERE user_id = $1 AND id <> $2 ORDER BY id',
      [target.id, already],
    );
    expect(rows).toEqual(
      [first, second].sort().map((id) => ({ id, revoked_by: admin.user.id, revoke_reason: 'lost laptop' })),
    );
    const events = await sql<{ resource_id: string; reason: string; actor_id: number }>(
      "SELECT resource_id, reason, actor_id FROM audit_events WHERE action = 'session.revoke' AND resource_id = ANY($1) ORDER BY resource_id",
      [[first, second, already]],
    );
    expect(events).toEqual(
      [first, second].sort().map((id) => ({ resource_id: id, reason: 'lost laptop', actor_id: admin.user.id })),
    );
    // On the feed each revoked session is shown as the sessions list shows it, plus changes.
    const listed = (await caller(a, root).get(`/v1/admin/users/${target.id}/sessions`).expect(200)).body.data;
    const fed = await sql<{ resource_id: string; data: Record<string, unknown> }>(
      "SELECT resource_id, data - 'changes' AS data FROM events WHERE type = 'session.revoke' AND resource_id = ANY($1) ORDER BY resource_id",
      [[first, second]],
    );
    expect(fed).toEqual(
      [first, second].sort().map((id) => ({
        resource_id: id,
        data: listed.find((row: { id: string }) => row.id === id),
      })),
    );
    // Nothing left to revoke: 200 with 0, and no new event.
    expect((await caller(b, admin).post(`/v1/admin/users/${target.id}/revoke-sessions`).expect(200)).body.data).toEqual(
      { user_id: target.id, revoked: 0 },
    );
    // The user itself is untouched: a new session works.
    await caller(b, bearer(target.id, await createSession(target.id)))
      .get('/v1/admin/users?page_size=1')
      .expect(200);
  });

  it('refuses oneself (422), unranked targets (403), a missing permission (403), a stale If-Match (412) and a deleted user (404)', async () => {
    const admin = await actor('admin');
    const self = await caller(a, admin).post(`/v1/admin/users/${admin.user.id}/revoke-sessions`).expect(422);
    expect(self.body.error).toMatchObject({
      code: 'SELF_ACTION_FORBIDDEN',
      details: { action: 'revoke_sessions', user_id: admin.user.id },
    });
    const peer = await createUser({ role: 'admin' });
    const peerSession = await createSession(peer.id);
    expect(
      (await caller(a, admin).post(`/v1/admin/users/${peer.id}/revoke-sessions`).expect(403)).body.error,
    ).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
    const operator = await actor('operator');
    const member = await createUser({ role: 'member' });
    expect(
      (await caller(a, operator).post(`/v1/admin/users/${member.id}/revoke-sessions`).expect(403)).body.error,
    ).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'users.revoke_sessions' } });
    const stale = await caller(a, root)
      .post(`/v1/admin/users/${peer.id}/revoke-sessions`)
      .set('If-Match', '"999"')
      .expect(412);
    expect(stale.body.error.code).toBe('PRECONDITION_FAILED');
    expect(await sql('SELECT revoked_at FROM auth_sessions WHERE id = $1', [peerSession])).toEqual([
      { revoked_at: null },
    ]);
    const [{ version } = { version: 0 }] = await sql<{ version: number }>('SELECT version FROM users WHERE id = $1', [
      peer.id,
    ]);
    await caller(a, root)
      .post(`/v1/admin/users/${peer.id}/revoke-sessions`)
      .set('If-Match', `"${version}"`)
      .expect(200);
    await caller(a, root).delete(`/v1/admin/users/${member.id}`).expect(200);
    expect(
      (await caller(a, root).post(`/v1/admin/users/${member.id}/revoke-sessions`).expect(404)).body.error.code,
    ).toBe('USER_NOT_FOUND');
    expect(
      (await caller(a, root).post(`/v1/admin/users/${peer.id}/revoke-sessions`, { token: 'x' }).expect(400)).body.error
        .details.fields[0].field,
    ).toBe('token');
  });
});
