import { actor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';

const PORTAL = 'https://portal.example.com';
const LOCAL = 'http://localhost:5173';

describe('CORS for the configured origins (part 1)', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null, env: { CORS_ORIGINS: `${PORTAL}, ${LOCAL}` } });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('answers an allowed origin’s preflight 204 with the methods and headers of part 1, before authentication', async () => {
    const preflight = await t
      .http()
      .options('/v1/admin/users')
      .set('Origin', LOCAL)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization, content-type, idempotency-key')
      .expect(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(LOCAL);
    expect(preflight.headers['access-control-allow-methods']).toContain('POST');
    expect(preflight.headers['access-control-allow-methods']).toContain('PATCH');
    for (const header of ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-Match', 'X-Request-Id', 'Prefer'])
      expect(preflight.headers['access-control-allow-headers']).toContain(header);
    expect(preflight.headers.vary).toContain('Origin');
  });

  it('lets an allowed origin read answers, refusals included, and the headers of part 1', async () => {
    const read = await t
      .http()
      .get(`/v1/admin/users/${root.user.id}`)
      .set('Origin', PORTAL)
      .set('Authorization', root.auth)
      .expect(200);
    expect(read.headers['access-control-allow-origin']).toBe(PORTAL);
    expect(read.headers['access-control-expose-headers']).toBe('ETag, Location, Retry-After, X-Request-Id');
    const refused = await t.http().get('/v1/admin/users').set('Origin', PORTAL).expect(401);
    expect(refused.headers['access-control-allow-origin']).toBe(PORTAL);
    expect(refused.body.error.code).toBe('AUTH_TOKEN_MISSING');
  });

  it('gives any other origin no CORS header at all (the browser keeps its refusal)', async () => {
    for (const origin of ['https://evil.example.com', 'https://portal.example.com.evil.net', 'null', `${PORTAL}/`]) {
      const preflight = await t
        .http()
        .options('/v1/admin/users')
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'DELETE');
      expect(preflight.status).not.toBe(204);
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
      const read = await t
        .http()
        .get('/v1/admin/users?page_size=1')
        .set('Origin', origin)
        .set('Authorization', root.auth)
        .expect(200);
      expect(read.headers['access-control-allow-origin']).toBeUndefined();
    }
  });
});

describe('CORS by default (no CORS_ORIGINS)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null });
  });
  afterAll(() => t.close());

  it('allows no origin', async () => {
    const preflight = await t
      .http()
      .options('/v1/admin/users')
      .set('Origin', PORTAL)
      .set('Access-Control-Request-Method', 'GET');
    expect(preflight.status).toBe(404);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });
});
