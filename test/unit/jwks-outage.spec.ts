import { jest } from '@jest/globals';
import jwt from 'jsonwebtoken';
import { generateKeyPairSync } from 'node:crypto';
import { createVerificationKeys } from '../../src/platform/auth/verification-keys.js';
import { ApiError } from '../../src/platform/http/api-error.js';
import { loadSettings } from '../../src/platform/config/settings.js';

/*
 * A key set that could not be fetched proves no key absent. The refused connection to an
 * identity provider that is down can fail within the millisecond the token arrived in; with the
 * clock held still, that failed fetch once counted as "a set fetched after the token arrived" and
 * the token was refused as signed by an unknown key (401) instead of 503.
 */
describe('JWKS keys while the identity provider is down', () => {
  afterEach(() => jest.restoreAllMocks());

  it('a token is answered 503 (the provider is down), not 401, however fast the fetch fails', async () => {
    jest.spyOn(Date, 'now').mockReturnValue(1_800_000_000_000);
    const keys = createVerificationKeys(
      loadSettings({ DATABASE_URL: 'postgresql://unused/x', JWT_JWKS_URL: 'http://127.0.0.1:1/jwks.json' }),
    );
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const token = jwt.sign({ sub: '1' }, privateKey, { algorithm: 'RS256', keyid: 'rsa-1' });
    const refused = await keys.keyFor(token).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(503);
  });
});
