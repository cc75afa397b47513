import jwt from 'jsonwebtoken';
import { createHmac, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSession, createUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });

function jwk(key: KeyObject, kid: string, alg: string): Record<string, unknown> {
  return { ...key.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

/** A stand-in identity provider: serves its public keys as a JWKS on loopback, and counts the fetches. */
async function startJwksServer(): Promise<{
  url: string;
  requests: () => number;
  publish: (key: Record<string, unknown>) => void;
  close: () => Promise<void>;
}> {
  let requests = 0;
  const keys = [jwk(rsa.publicKey, 'rsa-1', 'RS256'), jwk(ec.publicKey, 'ec-1', 'ES256')];
  const server: Server = createServer((_request, response) => {
    requests += 1;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    requests: () => requests,
    publish: (key) => keys.push(key),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const b64 = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('authentication in JWKS mode (RS256/ES256 from an identity provider)', () => {
  let jwks: Awaited<ReturnType<typeof startJwksServer>>;
  let t: TestApp;
  let claims: { sub: string; sid: string };
  beforeAll(async () => {
    jwks = await startJwksServer();
    t = await startApp({ env: { JWT_JWKS_URL: jwks.url } });
    const user = await createUser({ role: 'viewer' });
    claims = { sub: String(user.id), sid: await createSession(user.id) };
  });
  afterAll(async () => {
    await t.close();
    await jwks.close();
  });

  const sign = (key: KeyObject, algorithm: jwt.Algorithm, keyid: string, extra: jwt.SignOptions = {}): string =>
    jwt.sign(claims, key, {
      algorithm,
      keyid,
      issuer: 'admin-api',
      audience: 'admin-portal',
      expiresIn: 600,
      ...extra,
    });

  it('accepts RS256 and ES256 tokens signed by the provider, fetching its keys once', async () => {
    await t
      .http()
      .get('/v1/admin/users?page_size=1')
      .set('Authorization', `Bearer ${sign(rsa.privateKey, 'RS256', 'rsa-1')}`)
      .expect(200);
    await t
      .http()
      .get('/v1/admin/users?page_size=1')
      .set('Authorization', `Bearer ${sign(ec.privateKey, 'ES256', 'ec-1')}`)
      .expect(200);
    const before = jwks.requests();
    await t
      .http()
      .get('/v1/admin/users?page_size=1')
      .set('Authorization', `Bearer ${sign(rsa.privateKey, 'RS256', 'rsa-1')}`)
      .expect(200);
    expect(jwks.requests()).toBe(before);
  });

  it('refuses HS256 signed with the public key (algorithm confusion) with AUTH_TOKEN_INVALID', async () => {
    const publicPem = rsa.publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const header = b64({ alg: 'HS256', typ: 'JWT', kid: 'rsa-1' });
    const payload = b64({ ...claims, iss: 'admin-api', aud: 'admin-portal', exp: Math.floor(Date.now() / 1000) + 600 });
    const forged = `${header}.${payload}.${createHmac('sha256', publicPem).update(`${header}.${payload}`).digest('base64url')}`;
    const response = await t.http().get('/v1/admin/users').set('Authorization', `Bearer ${forged}`).expect(401);
    expect(response.body.error.code).toBe('AUTH_TOKEN_INVALID');
  });

  it('refuses alg none, an unknown kid, a foreign key, and wrong issuer or audience', async () => {
    const none = `${b64({ alg: 'none', kid: 'rsa-1' })}.${b64({ ...claims, iss: 'admin-api', aud: 'admin-portal', exp: Math.floor(Date.now() / 1000) + 600 })}.`;
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
    for (const token of [
      none,
      sign(rsa.privateKey, 'RS256', 'unknown-kid'),
      sign(stranger.privateKey, 'RS256', 'rsa-1'),
      sign(rsa.privateKey, 'RS256', 'rsa-1', { issuer: 'evil' }),
      sign(rsa.privateKey, 'RS256', 'rsa-1', { audience: 'evil' }),
    ]) {
      const response = await t.http().get('/v1/admin/users').set('Authorization', `Bearer ${token}`).expect(401);
      expect(response.body.error.code).toBe('AUTH_TOKEN_INVALID');
    }
  });

  it('401 AUTH_TOKEN_EXPIRED for an expired RS256 token', async () => {
    const expired = jwt.sign({ ...claims, exp: Math.floor(Date.now() / 1000) - 60 }, rsa.privateKey, {
      algorithm: 'RS256',
      keyid: 'rsa-1',
      issuer: 'admin-api',
      audience: 'admin-portal',
    });
    const response = await t.http().get('/v1/admin/users').set('Authorization', `Bearer ${expired}`).expect(401);
    expect(response.body.error.code).toBe('AUTH_TOKEN_EXPIRED');
  });

  it('answers 503 (not 401) while the identity provider cannot be reached', async () => {
    // Port 1: nothing listens there (a free port picked now could be taken by another spec's server).
    const down = await startApp({ env: { JWT_JWKS_URL: 'http://127.0.0.1:1/jwks.json' } });
    try {
      const response = await down
        .http()
        .get('/v1/admin/users')
        .set('Authorization', `Bearer ${sign(rsa.privateKey, 'RS256', 'rsa-1')}`)
        .expect(503);
      expect(response.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { dependency: 'jwks' } });
      expect(response.headers['retry-after']).toBe('5');
    } finally {
      await down.close();
    }
  });

  it('junk kids are refused without using up the key fetches: the provider is asked at most once a second', async () => {
    const valid = sign(rsa.privateKey, 'RS256', 'rsa-1');
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', `Bearer ${valid}`).expect(200);
    const before = jwks.requests();
    const started = Date.now();
    // 40 tokens, each with a kid of its own, all at once: below the failed-authentication limit of the spec.
    const junk = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        t
          .http()
          .get('/v1/admin/users')
          .set('Authorization', `Bearer ${sign(rsa.privateKey, 'RS256', `junk-${index}-${Date.now()}`)}`),
      ),
    );
    expect(new Set(junk.map((response) => `${response.status} ${response.body.error.code}`))).toEqual(
      new Set(['401 AUTH_TOKEN_INVALID']),
    );
    const seconds = Math.ceil((Date.now() - started) / 1000);
    expect(jwks.requests() - before).toBeLessThanOrEqual(seconds + 1);
    // The same junk again: answered from what the last fetch showed, no fetch at all.
    const afterBurst = jwks.requests();
    const repeated = sign(rsa.privateKey, 'RS256', 'junk-repeated');
    await t.http().get('/v1/admin/users').set('Authorization', `Bearer ${repeated}`).expect(401);
    const fetchesForRepeat = jwks.requests();
    for (let index = 0; index < 5; index += 1)
      await t.http().get('/v1/admin/users').set('Authorization', `Bearer ${repeated}`).expect(401);
    expect(jwks.requests()).toBe(fetchesForRepeat);
    expect(fetchesForRepeat - afterBurst).toBeLessThanOrEqual(1);
    // A real token keeps working throughout, without a fetch.
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', `Bearer ${valid}`).expect(200);
    expect(jwks.requests()).toBe(fetchesForRepeat);
  });

  it('a key published right after a burst of junk is found: rotation is never refused because of junk', async () => {
    const rotated = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await Promise.all(
      Array.from({ length: 15 }, (_, index) =>
        t
          .http()
          .get('/v1/admin/users')
          .set('Authorization', `Bearer ${sign(rsa.privateKey, 'RS256', `junk-rotation-${index}`)}`)
          .expect(401),
      ),
    );
    jwks.publish(jwk(rotated.publicKey, 'rsa-2', 'RS256'));
    const response = await t
      .http()
      .get('/v1/admin/users?page_size=1')
      .set('Authorization', `Bearer ${sign(rotated.privateKey, 'RS256', 'rsa-2')}`);
    expect(response.status).toBe(200);
  });
});
