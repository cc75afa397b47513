import { jest } from '@jest/globals';
import { createHmac, createSecretKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { ApiError } from '../../src/platform/http/api-error.js';
import { loadSettings } from '../../src/platform/config/settings.js';
import { bearerToken, TokenVerifier } from '../../src/platform/auth/token-verifier.js';
import type { VerificationKeys } from '../../src/platform/auth/verification-keys.js';

const secret = createSecretKey(Buffer.from('unit-secret-0123456789abcdef0123456789', 'utf8'));
const settings = loadSettings({ JWT_SECRET: 'unit-secret-0123456789abcdef0123456789' });

/** Secret-mode keys that count how often a key was asked for and can be made to fail. */
function keys(key: KeyObject = secret): VerificationKeys & { asked: number; failWith?: Error } {
  const state = {
    mode: 'secret' as const,
    algorithms: ['HS256'] as const,
    asked: 0,
    failWith: undefined as Error | undefined,
    keyFor(): Promise<KeyObject> {
      state.asked += 1;
      return state.failWith === undefined ? Promise.resolve(key) : Promise.reject(state.failWith);
    },
  };
  return state;
}

function sign(claims: object, options: jwt.SignOptions = {}, key: KeyObject | string = secret): string {
  return jwt.sign(claims, key, {
    algorithm: 'HS256',
    issuer: 'admin-api',
    audience: 'admin-portal',
    expiresIn: 60,
    ...options,
  });
}

async function refusal(promise: Promise<unknown>): Promise<{ code: string; details: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiError) return { code: error.code, details: error.details };
    throw error;
  }
  throw new Error('expected a refusal');
}

const good = { sub: '7', sid: 'session-7' };

/** A token built by hand (header and payload as raw text), HS256-signed with the test secret. */
function rawToken(header: string, payload: string): string {
  const unsigned = `${Buffer.from(header).toString('base64url')}.${Buffer.from(payload).toString('base64url')}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}

describe('bearerToken: the Authorization header of part 4', () => {
  it('takes exactly Bearer, one space and the token', () =>
    expect(bearerToken('Bearer abc.def.ghi')).toBe('abc.def.ghi'));

  it.each([[undefined], [''], ['Basic dXNlcjpwdw=='], ['Bearer'], ['Bearer '], ['Token abc'], ['Bearerx abc.def.ghi']])(
    'calls %j a missing token',
    (header) => expect(() => bearerToken(header)).toThrow(expect.objectContaining({ code: 'AUTH_TOKEN_MISSING' })),
  );

  it.each([
    ['Bearer  abc.def.ghi'],
    ['Bearer abc.def.ghi trailing'],
    ['Bearer abc.def.ghi\t'],
    ['Bearer abc\ndef'],
    ['Bearer\tabc.def.ghi'],
    ['bearer abc.def.ghi'],
    ['BEARER abc.def.ghi'],
  ])('calls %j an invalid token', (header) =>
    expect(() => bearerToken(header)).toThrow(expect.objectContaining({ code: 'AUTH_TOKEN_INVALID' })),
  );
});

describe('TokenVerifier: pinned algorithms, issuer, audience, claims, and one signature check per token', () => {
  it('answers the user and session of a valid token, and verifies its signature only once', async () => {
    const verifier = new TokenVerifier(settings, keys());
    const verify = jest.spyOn(jwt, 'verify');
    const token = sign(good);
    await expect(verifier.verify(`Bearer ${token}`)).resolves.toEqual({ user_id: 7, session_id: 'session-7' });
    await expect(verifier.verify(`Bearer ${token}`)).resolves.toEqual({ user_id: 7, session_id: 'session-7' });
    expect(verify).toHaveBeenCalledTimes(1);
    verify.mockRestore();
  });

  it('refuses a wrong issuer, audience, algorithm, signature, alg none and an expired token', async () => {
    const verifier = new TokenVerifier(settings, keys());
    for (const token of [
      sign(good, { issuer: 'someone-else' }),
      sign(good, { audience: 'another-app' }),
      sign(good, { algorithm: 'HS512' }),
      sign(good, {}, 'another-secret-0123456789abcdef0123'),
      jwt.sign(good, '', { algorithm: 'none', issuer: 'admin-api', audience: 'admin-portal', expiresIn: 60 }),
    ])
      expect((await refusal(verifier.verify(`Bearer ${token}`))).code).toBe('AUTH_TOKEN_INVALID');
    const expired = jwt.sign({ ...good, exp: Math.floor(Date.now() / 1000) - 10 }, secret, {
      algorithm: 'HS256',
      issuer: 'admin-api',
      audience: 'admin-portal',
    });
    expect((await refusal(verifier.verify(`Bearer ${expired}`))).code).toBe('AUTH_TOKEN_EXPIRED');
  });

  it('refuses a token whose header carries crit (RFC 7515 §4.1.11), however valid its signature', async () => {
    const verifier = new TokenVerifier(settings, keys());
    const token = sign(good, { header: { alg: 'HS256', crit: ['exp'] } });
    expect(await refusal(verifier.verify(`Bearer ${token}`))).toEqual({
      code: 'AUTH_TOKEN_INVALID',
      details: { reason: 'crit_header_unsupported' },
    });
  });

  it('answers 401, never a thrown parse error, for a token whose parts are not JSON', async () => {
    const verifier = new TokenVerifier(settings, keys());
    // A JWT-typed header over a payload that is not JSON: decoding it throws a SyntaxError.
    const signed = rawToken('{"alg":"HS256","typ":"JWT"}', 'x');
    const withSignature = (token: string, signature: string): string => token.replace(/[^.]*$/, signature);
    for (const token of [withSignature(signed, 'abc'), signed, withSignature(rawToken('{', '{}'), 'x')])
      expect((await refusal(verifier.verify(`Bearer ${token}`))).code).toBe('AUTH_TOKEN_INVALID');
  });

  it('refuses an expiry that is not a finite number (exp 1e400 parses as Infinity)', async () => {
    const verifier = new TokenVerifier(settings, keys());
    const token = rawToken(
      '{"alg":"HS256","typ":"JWT"}',
      '{"sub":"7","sid":"s","iss":"admin-api","aud":"admin-portal","exp":1e400}',
    );
    expect(await refusal(verifier.verify(`Bearer ${token}`))).toEqual({
      code: 'AUTH_TOKEN_INVALID',
      details: { reason: 'missing_claim', claim: 'exp' },
    });
  });

  it('names the claim that is missing or malformed', async () => {
    const verifier = new TokenVerifier(settings, keys());
    const noExp = jwt.sign(good, secret, { algorithm: 'HS256', issuer: 'admin-api', audience: 'admin-portal' });
    const cases: [string, string][] = [
      [sign({ sid: 's' }), 'sub'],
      [sign({ sub: '0', sid: 's' }), 'sub'],
      [sign({ sub: '12345678901234567', sid: 's' }), 'sub'],
      [sign({ sub: '7' }), 'sid'],
      [sign({ sub: '7', sid: '' }), 'sid'],
      [noExp, 'exp'],
    ];
    for (const [token, claim] of cases)
      expect(await refusal(verifier.verify(`Bearer ${token}`))).toEqual({
        code: 'AUTH_TOKEN_INVALID',
        details: { reason: 'missing_claim', claim },
      });
  });

  it('lets a key provider’s own error through (JWKS down is a 503, not a 401) and maps others to a 401', async () => {
    const provider = keys();
    const verifier = new TokenVerifier(settings, provider);
    provider.failWith = ApiError.unavailable();
    expect((await refusal(verifier.verify(`Bearer ${sign(good)}`))).code).toBe('SERVICE_UNAVAILABLE');
    provider.failWith = new Error('no key for this token');
    expect(await refusal(verifier.verify(`Bearer ${sign(good)}`))).toEqual({
      code: 'AUTH_TOKEN_INVALID',
      details: { reason: 'no key for this token' },
    });
  });

  it('verifies again with a new key object: a rotated secret or key is never served from the memo', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    let current: KeyObject = publicKey;
    const provider: VerificationKeys = {
      mode: 'jwks',
      algorithms: ['ES256'],
      keyFor: () => Promise.resolve(current),
    };
    const verifier = new TokenVerifier(settings, provider);
    const token = sign(good, { algorithm: 'ES256' }, privateKey);
    await expect(verifier.verify(`Bearer ${token}`)).resolves.toMatchObject({ user_id: 7 });
    current = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    expect((await refusal(verifier.verify(`Bearer ${token}`))).code).toBe('AUTH_TOKEN_INVALID');
  });
});
