import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import jwt, { type Algorithm } from 'jsonwebtoken';
import { JwksClient } from 'jwks-rsa';
import { ApiError } from '../common/api-error.js';
import type { Settings } from '../config/settings.js';

/** How tokens are verified: the pinned algorithms and the key for one token. */
export interface VerificationKeys {
  readonly mode: 'secret' | 'jwks';
  readonly algorithms: readonly Algorithm[];
  keyFor(token: string): Promise<KeyObject>;
}

export const VERIFICATION_KEYS = Symbol('VERIFICATION_KEYS');

/**
 * The HS256 key as a `KeyObject`: `jsonwebtoken` given a string first tries to parse it as a
 * public key, which made verification about 50 times slower (ARCHITECTURE.md).
 */
export function secretKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret, 'utf8'));
}

export function createVerificationKeys(settings: Settings): VerificationKeys {
  if (settings.jwtJwksUrl !== undefined) return jwksKeys(settings.jwtJwksUrl);
  if (settings.jwtSecret === undefined) throw new Error('no JWT verification mode: set JWT_SECRET or JWT_JWKS_URL');
  const key = secretKey(settings.jwtSecret);
  return { mode: 'secret', algorithms: ['HS256'], keyFor: () => Promise.resolve(key) };
}

/** Public keys of the identity provider, fetched by `kid` and kept as `KeyObject`s. */
function jwksKeys(url: string): VerificationKeys {
  const client = new JwksClient({
    jwksUri: url,
    cache: true,
    cacheMaxAge: 10 * 60_000,
    rateLimit: true,
    jwksRequestsPerMinute: 10,
    timeout: 3000,
  });
  const keys = new Map<string, KeyObject>();
  return {
    mode: 'jwks',
    // Asymmetric only: an HS256 token "signed" with the public key is refused (algorithm confusion).
    algorithms: ['RS256', 'ES256'],
    async keyFor(token: string): Promise<KeyObject> {
      const decoded = jwt.decode(token, { complete: true });
      const kid = decoded?.header.kid;
      const known = keys.get(kid ?? '');
      if (known !== undefined) return known;
      try {
        const signing = await client.getSigningKey(kid);
        const key = createPublicKey(signing.getPublicKey());
        if (keys.size > 100) keys.clear();
        keys.set(kid ?? '', key);
        return key;
      } catch (error) {
        if (error instanceof Error && error.name === 'SigningKeyNotFoundError') {
          throw new ApiError('AUTH_TOKEN_INVALID', 'No key of the identity provider matches the token', {
            reason: 'unknown kid',
          });
        }
        // The provider is down, not the token bad: a 401 would make the portal sign the user out.
        throw new ApiError(
          'SERVICE_UNAVAILABLE',
          "The identity provider's signing keys could not be fetched; retry shortly",
          { dependency: 'jwks' },
          { 'Retry-After': '5' },
        );
      }
    },
  };
}
