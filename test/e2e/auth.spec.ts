import { setTimeout as sleep } from 'node:timers/promises';
import { actor, createSession, createUser, signToken, tokenFor } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';

function base64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

describe('authentication (part 4) and the role layers (part 5), secret mode', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  async function expect401(
    authorization: string | undefined,
    code: string,
    path = '/v1/admin/users?page_size=1',
  ): Promise<Record<string, unknown>> {
    const request = t.http().get(path);
    if (authorization !== undefined) void request.set('Authorization', authorization);
    const response = await request.expect(401);
    expect(response.body).toMatchObject({ success: false, error: { code }, meta: { request_id: expect.any(String) } });
    return response.body.error as Record<string, unknown>;
  }

  it('lets a valid token through and answers with the list', async () => {
    const { auth } = await actor('viewer');
    const response = await t.http().get('/v1/admin/users?page_size=1').set('Authorization', auth).expect(200);
    expect(response.body.success).toBe(true);
  });

  it('401 AUTH_TOKEN_MISSING without a token, with another scheme, and for a token in the query string', async () => {
    const { token } = await actor('super_admin');
    await expect401(undefined, 'AUTH_TOKEN_MISSING');
    await expect401(`Basic ${token}`, 'AUTH_TOKEN_MISSING');
    await expect401(undefined, 'AUTH_TOKEN_MISSING', `/v1/admin/users?access_token=${token}`);
  });

  it('401 AUTH_TOKEN_INVALID for a bad signature, garbage, alg none, wrong issuer or audience', async () => {
    const { user } = await actor('super_admin');
    const sid = await createSession(user.id);
    const claims = { sub: String(user.id), sid };
    await expect401(
      `Bearer ${signToken(claims, {}, 'another-secret-of-at-least-32-characters!!')}`,
      'AUTH_TOKEN_INVALID',
    );
    await expect401('Bearer not.a.jwt', 'AUTH_TOKEN_INVALID');
    const none = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ ...claims, iss: 'admin-api', aud: 'admin-portal', exp: Math.floor(Date.now() / 1000) + 600 })}.`;
    await expect401(`Bearer ${none}`, 'AUTH_TOKEN_INVALID');
    await expect401(`Bearer ${signToken(claims, { issuer: 'someone-else' })}`, 'AUTH_TOKEN_INVALID');
    await expect401(`Bearer ${signToken(claims, { audience: 'another-app' })}`, 'AUTH_TOKEN_INVALID');
    // HS512 with the right secret is still refused: the algorithm is pinned to HS256.
    await expect401(`Bearer ${signToken(claims, { algorithm: 'HS512' })}`, 'AUTH_TOKEN_INVALID');
  });

  it('401 AUTH_TOKEN_INVALID for an Authorization header that is not exactly "Bearer <token>", or a crit header', async () => {
    const { user, token } = await actor('super_admin');
    for (const header of [`Bearer  ${token}`, `Bearer ${token} trailing`, `Bearer\t${token}`, `bearer ${token}`])
      expect(await expect401(header, 'AUTH_TOKEN_INVALID')).toMatchObject({
        details: { reason: 'malformed_authorization_header' },
      });
    const sid = await createSession(user.id);
    const crit = signToken({ sub: String(user.id), sid }, { header: { alg: 'HS256', crit: ['exp'] } });
    expect(await expect401(`Bearer ${crit}`, 'AUTH_TOKEN_INVALID')).toMatchObject({
      details: { reason: 'crit_header_unsupported' },
    });
  });

  it('401 AUTH_TOKEN_INVALID when sub, sid or exp is missing', async () => {
    const { user } = await actor('super_admin');
    const sid = await createSession(user.id);
    expect(await expect401(`Bearer ${signToken({ sid })}`, 'AUTH_TOKEN_INVALID')).toMatchObject({
      details: { claim: 'sub' },
    });
    expect(await expect401(`Bearer ${signToken({ sub: String(user.id) })}`, 'AUTH_TOKEN_INVALID')).toMatchObject({
      details: { claim: 'sid' },
    });
    const noExp = signToken({ sub: String(user.id), sid }, { expiresIn: undefined });
    expect(await expect401(`Bearer ${noExp}`, 'AUTH_TOKEN_INVALID')).toMatchObject({ details: { claim: 'exp' } });
  });

  it('401 AUTH_TOKEN_EXPIRED for an expired token', async () => {
    const { user } = await actor('super_admin');
    const expired = signToken(
      { sub: String(user.id), sid: await createSession(user.id), exp: Math.floor(Date.now() / 1000) - 60 },
      { expiresIn: undefined },
    );
    await expect401(`Bearer ${expired}`, 'AUTH_TOKEN_EXPIRED');
  });

  it('a token verified once is refused the second its exp passes, and a token signed with another key never rides on it', async () => {
    const { user } = await actor('super_admin');
    const sid = await createSession(user.id);
    const exp = Math.floor(Date.now() / 1000) + 2;
    const token = signToken({ sub: String(user.id), sid, exp }, { expiresIn: undefined });
    // Verified, then remembered by the instance: the next calls skip the signature check.
    for (let call = 0; call < 3; call += 1)
      await t.http().get('/v1/admin/users?page_size=1').set('Authorization', `Bearer ${token}`).expect(200);
    // Same claims, forged signature: the remembered claims belong to the exact token string.
    const forged = `${token.slice(0, token.lastIndexOf('.'))}.${'A'.repeat(43)}`;
    await expect401(`Bearer ${forged}`, 'AUTH_TOKEN_INVALID');
    await sleep(exp * 1000 - Date.now() + 50);
    await expect401(`Bearer ${token}`, 'AUTH_TOKEN_EXPIRED');
  });

  it('401 AUTH_SESSION_INVALID for an unknown, foreign, revoked or expired session', async () => {
    const { user } = await actor('super_admin');
    const other = await createUser({ role: 'super_admin' });
    expect(
      await expect401(
        `Bearer ${signToken({ sub: String(user.id), sid: '00000000-0000-4000-8000-000000000000' })}`,
        'AUTH_SESSION_INVALID',
      ),
    ).toMatchObject({ details: { reason: 'unknown_session' } });
    expect(
      await expect401(`Bearer ${signToken({ sub: String(user.id), sid: 'not-a-uuid' })}`, 'AUTH_SESSION_INVALID'),
    ).toMatchObject({ details: { reason: 'unknown_session' } });
    expect(
      await expect401(
        `Bearer ${signToken({ sub: String(user.id), sid: await createSession(other.id) })}`,
        'AUTH_SESSION_INVALID',
      ),
    ).toMatchObject({ details: { reason: 'unknown_session' } });
    const revoked = await createSession(user.id);
    await sql('UPDATE auth_sessions SET revoked_at = now() WHERE id = $1', [revoked]);
    expect(
      await expect401(`Bearer ${signToken({ sub: String(user.id), sid: revoked })}`, 'AUTH_SESSION_INVALID'),
    ).toMatchObject({ details: { reason: 'session_revoked' } });
    const stale = await createSession(user.id);
    await sql("UPDATE auth_sessions SET expires_at = now() - interval '1 second' WHERE id = $1", [stale]);
    expect(
      await expect401(`Bearer ${signToken({ sub: String(user.id), sid: stale })}`, 'AUTH_SESSION_INVALID'),
    ).toMatchObject({ details: { reason: 'session_expired' } });
  });

  it('401 AUTH_SESSION_INVALID for a pending user', async () => {
    const pending = await createUser({ role: 'admin', status: 'pending' });
    expect(await expect401(`Bearer ${await tokenFor(pending)}`, 'AUTH_SESSION_INVALID')).toMatchObject({
      details: { reason: 'user_not_active' },
    });
  });

  it("rejects a suspended user's next request although the token's signature and expiry are valid", async () => {
    const admin = await actor('super_admin');
    const victim = await actor('admin');
    // Warm the cache: the victim's auth context is now cached.
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', victim.auth).expect(200);
    await t
      .http()
      .post(`/v1/admin/users/${victim.user.id}/suspend`)
      .set('Authorization', admin.auth)
      .send({ reason: 'left the company' })
      .expect(200);
    expect(await expect401(victim.auth, 'AUTH_SESSION_INVALID')).toMatchObject({
      details: { reason: 'session_revoked' },
    });
    const sessions = await sql<{ revoked_at: Date | null; revoke_reason: string }>(
      'SELECT revoked_at, revoke_reason FROM auth_sessions WHERE user_id = $1',
      [victim.user.id],
    );
    expect(sessions).toEqual([{ revoked_at: expect.any(Date), revoke_reason: 'left the company' }]);
    // Even a session created after the suspension is refused while the user is suspended.
    expect(await expect401(`Bearer ${await tokenFor(victim.user)}`, 'AUTH_SESSION_INVALID')).toMatchObject({
      details: { reason: 'user_not_active' },
    });
  });

  it("rejects a deleted user's next request", async () => {
    const admin = await actor('super_admin');
    const victim = await actor('operator');
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', victim.auth).expect(200);
    await t.http().delete(`/v1/admin/users/${victim.user.id}`).set('Authorization', admin.auth).expect(200);
    await expect401(victim.auth, 'AUTH_SESSION_INVALID');
    expect(await expect401(`Bearer ${await tokenFor(victim.user)}`, 'AUTH_SESSION_INVALID')).toMatchObject({
      details: { reason: 'user_deleted' },
    });
  });

  it('applies a role change on the very next request', async () => {
    const admin = await actor('super_admin');
    const subject = await actor('viewer');
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', subject.auth).expect(200);
    await t
      .http()
      .patch(`/v1/admin/users/${subject.user.id}`)
      .set('Authorization', admin.auth)
      .send({ role_id: 5 })
      .expect(200);
    const response = await t.http().get('/v1/admin/users?page_size=1').set('Authorization', subject.auth).expect(403);
    expect(response.body.error).toEqual({
      code: 'ROLE_FORBIDDEN',
      message: 'The role member has no access to the admin API',
      details: { role_id: 5 },
    });
  });

  it('403 ROLE_FORBIDDEN for a member, on reads and writes alike', async () => {
    const { auth } = await actor('member');
    for (const request of [t.http().get('/v1/admin/users'), t.http().post('/v1/admin/users').send({})]) {
      const response = await request.set('Authorization', auth).expect(403);
      expect(response.body.error.code).toBe('ROLE_FORBIDDEN');
    }
  });

  it('403 PERMISSION_DENIED for a viewer writing, naming the permission, and nothing is written', async () => {
    const { auth } = await actor('viewer');
    const email = `denied-${Date.now()}@example.com`;
    const response = await t
      .http()
      .post('/v1/admin/users')
      .set('Authorization', auth)
      .send({ email, display_name: 'X', role_id: 4 })
      .expect(403);
    expect(response.body.error).toEqual({
      code: 'PERMISSION_DENIED',
      message: 'Missing the permission users.create',
      details: { permission: 'users.create' },
    });
    expect(await sql('SELECT id FROM users WHERE email = $1', [email])).toEqual([]);
  });

  it('records the actor of a request in its log context and audit events', async () => {
    const admin = await actor('super_admin');
    const created = await t
      .http()
      .post('/v1/admin/users')
      .set('Authorization', admin.auth)
      .set('X-Request-Id', 'audit-actor-check')
      .send({ email: `a-${Date.now()}@example.com`, display_name: 'A', role_id: 4 })
      .expect(201);
    const events = await sql(
      'SELECT actor_id, action, request_id FROM audit_events WHERE resource_type = $1 AND resource_id = $2',
      ['user', String(created.body.data.id)],
    );
    expect(events).toEqual([{ actor_id: admin.user.id, action: 'user.create', request_id: 'audit-actor-check' }]);
  });
});

describe('two instances sharing PostgreSQL and Redis', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    [a, b] = await Promise.all([startApp({ widgets: false }), startApp({ widgets: false })]);
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  it('a user suspended on one instance is refused by the other on its very next request', async () => {
    const root = await actor('super_admin');
    const victim = await actor('viewer');
    await b.http().get('/v1/admin/users?page_size=1').set('Authorization', victim.auth).expect(200);
    await a.http().post(`/v1/admin/users/${victim.user.id}/suspend`).set('Authorization', root.auth).expect(200);
    const refused = await b.http().get('/v1/admin/users?page_size=1').set('Authorization', victim.auth).expect(401);
    expect(refused.body.error.code).toBe('AUTH_SESSION_INVALID');
  });

  it('a role change on one instance applies on the other at once', async () => {
    const root = await actor('super_admin');
    const subject = await actor('admin');
    const target = await createUser({ role: 'viewer' });
    await b.http().post(`/v1/admin/users/${target.id}/reset-pin`).set('Authorization', subject.auth).expect(200);
    await a
      .http()
      .patch(`/v1/admin/users/${subject.user.id}`)
      .set('Authorization', root.auth)
      .send({ role_id: 4 })
      .expect(200);
    const denied = await b
      .http()
      .post(`/v1/admin/users/${target.id}/reset-pin`)
      .set('Authorization', subject.auth)
      .expect(403);
    expect(denied.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'users.reset_pin' } });
  });
});

describe('per-address limit on failed authentication', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ redisUrl: null, env: { AUTH_FAILURE_LIMIT_PER_MINUTE: '3' } });
  });
  afterAll(() => t.close());

  it('answers 429 RATE_LIMITED with Retry-After after the limit to requests that fail, and serves valid tokens (part 10)', async () => {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      await t.http().get('/v1/admin/users').set('Authorization', 'Bearer nonsense').expect(401);
    }
    const limited = await t.http().get('/v1/admin/users').set('Authorization', 'Bearer nonsense').expect(429);
    expect(limited.body.error).toMatchObject({ code: 'RATE_LIMITED', details: { scope: 'ip' } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Many users share one NAT address: whoever authenticates is served from a blocked address.
    const { auth } = await actor('super_admin');
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', auth).expect(200);
    await t.http().get('/v1/admin/users').set('Authorization', 'Bearer still-nonsense').expect(429);
    // Public routes are not behind authentication and stay reachable.
    await t.http().get('/health/live').expect(200);
  });
});

describe('per-address limit on failed authentication, for tokens that do not even parse', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null, env: { AUTH_FAILURE_LIMIT_PER_MINUTE: '2' } });
  });
  afterAll(() => t.close());

  it('answers a JWT-typed token over a payload that is not JSON with 401, counted like any failure', async () => {
    const unparsable = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${Buffer.from('x').toString('base64url')}.abc`;
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const refused = await t.http().get('/v1/admin/roles').set('Authorization', `Bearer ${unparsable}`).expect(401);
      expect(refused.body.error).toMatchObject({ code: 'AUTH_TOKEN_INVALID' });
    }
    const limited = await t.http().get('/v1/admin/roles').set('Authorization', `Bearer ${unparsable}`).expect(429);
    expect(limited.body.error).toMatchObject({ code: 'RATE_LIMITED', details: { scope: 'ip' } });
  });
});

describe('per-actor rate limit, shared through Redis', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    [a, b] = await Promise.all([
      startApp({ widgets: false, env: { RATE_LIMIT_PER_MINUTE: '6' } }),
      startApp({ widgets: false, env: { RATE_LIMIT_PER_MINUTE: '6' } }),
    ]);
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  it('counts an actor across instances and answers 429 with Retry-After; other actors are unaffected', async () => {
    const busy = await actor('viewer');
    for (const app of [a, b, a, b, a, b])
      await app.http().get('/v1/admin/users?page_size=1').set('Authorization', busy.auth).expect(200);
    // Instances share their counts every 200 ms.
    await sleep(450);
    const limited = await b.http().get('/v1/admin/users?page_size=1').set('Authorization', busy.auth).expect(429);
    expect(limited.body.error).toMatchObject({
      code: 'RATE_LIMITED',
      details: { scope: 'actor', limit_per_minute: 6 },
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    await a.http().get('/v1/admin/users?page_size=1').set('Authorization', busy.auth).expect(429);
    const calm = await actor('viewer');
    await a.http().get('/v1/admin/users?page_size=1').set('Authorization', calm.auth).expect(200);
  });
});

describe('X-Forwarded-For is trusted only for the configured proxy hops', () => {
  it('rotating the header does not escape the failed-authentication limit', async () => {
    const direct = await startApp({ widgets: false, redisUrl: null, env: { AUTH_FAILURE_LIMIT_PER_MINUTE: '3' } });
    const behindProxy = await startApp({
      widgets: false,
      redisUrl: null,
      env: { AUTH_FAILURE_LIMIT_PER_MINUTE: '3', TRUST_PROXY_HOPS: '1' },
    });
    try {
      // No trusted proxy: the socket address counts, whatever the header says.
      for (let attempt = 0; attempt < 3; attempt += 1)
        await direct
          .http()
          .get('/v1/admin/users')
          .set('X-Forwarded-For', `203.0.113.${attempt}`)
          .set('Authorization', 'Bearer x')
          .expect(401);
      await direct
        .http()
        .get('/v1/admin/users')
        .set('X-Forwarded-For', '198.51.100.99')
        .set('Authorization', 'Bearer x')
        .expect(429);
      // One trusted proxy: only the entry it appended (the last) counts; what the client put before it does not.
      for (let attempt = 0; attempt < 3; attempt += 1)
        await behindProxy
          .http()
          .get('/v1/admin/users')
          .set('X-Forwarded-For', `203.0.113.${attempt}, 10.9.8.7`)
          .set('Authorization', 'Bearer x')
          .expect(401);
      await behindProxy
        .http()
        .get('/v1/admin/users')
        .set('X-Forwarded-For', '192.0.2.1, 10.9.8.7')
        .set('Authorization', 'Bearer x')
        .expect(429);
      await behindProxy
        .http()
        .get('/v1/admin/users')
        .set('X-Forwarded-For', '10.9.8.8')
        .set('Authorization', 'Bearer x')
        .expect(401);
    } finally {
      await Promise.all([direct.close(), behindProxy.close()]);
    }
  });
});
