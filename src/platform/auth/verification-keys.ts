import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import jwt, { type Algorithm } from 'jsonwebtoken';
import type { JwksClient as Jwks } from 'jwks-rsa';
import { createRequire } from 'node:module';
import { ApiError } from '../http/api-error.js';
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

/** At most one fetch of the provider's key set per this interval, whatever the tokens claim. */
const REFRESH_INTERVAL_MS = 1000;
/**
 * A `kid` the provider did not have at a refresh after the token arrived is refused this long
 * without a fetch. Short: a kid guessed before its key is published delays that key at most this.
 */
const ABSENT_FOR_MS = 5_000;
const MAX_ABSENT = 10_000;
/**
 * The key set is fetched again once it is this old, whatever the tokens claim: a key the provider
 * withdrew (a compromised one) stops verifying within this time, not only when some token with an
 * unknown kid happens to ask for a refresh.
 */
const MAX_KEY_SET_AGE_MS = 5 * 60_000;

function jwksUnavailable(): ApiError {
  // The provider is down, not the token bad: a 401 would make the portal sign the user out.
  return new ApiError(
    'SERVICE_UNAVAILABLE',
    "The identity provider's signing keys could not be fetched; retry shortly",
    { dependency: 'jwks' },
    { 'Retry-After': '5' },
  );
}

function unknownKid(): ApiError {
  return new ApiError('AUTH_TOKEN_INVALID', 'No key of the identity provider matches the token', {
    reason: 'unknown kid',
  });
}

/**
 * Public keys of the identity provider. The whole key set is fetched at once and kept; a token
 * whose `kid` is not in it waits for the next refresh, and refreshes happen at most once per
 * second however many tokens ask (one fetch serves all of them). A `kid` still absent after a
 * refresh made since the token arrived is refused, and remembered for five seconds, so repeated
 * junk costs no fetch at all and no junk can use up what a real key rotation needs: a token
 * signed with a newly published key waits at most a second for the refresh that finds it.
 */
function jwksKeys(url: string): VerificationKeys {
  // Loaded only when keys come from a JWKS: a server on a shared secret never holds it (2 MB of heap).
  const { JwksClient } = createRequire(import.meta.url)('jwks-rsa') as { JwksClient: typeof Jwks };
  const client = new JwksClient({ jwksUri: url, cache: false, rateLimit: false, timeout: 3000 });
  let keys = new Map<string, KeyObject>();
  // When the key set in hand was fetched (the fetch's start), and when a fetch was last tried.
  let fetchedAt = 0;
  let triedAt = 0;
  let refreshing: Promise<void> | undefined;
  const absent = new Map<string, number>();

  const refresh = (): Promise<void> => {
    refreshing ??= (async () => {
      const wait = triedAt + REFRESH_INTERVAL_MS - Date.now();
      if (wait > 0) await sleep(wait);
      // When the fetch started: only a set fetched after a token arrived can prove its kid absent.
      // A fetch that failed proves nothing: it paces the next try, it does not count as fetched.
      const started = Date.now();
      triedAt = started;
      const signing = await client.getSigningKeys();
      // An unchanged key keeps its KeyObject: tokens it verified stay remembered (VerifiedTokens).
      const previous = keys;
      keys = new Map(
        signing.map((key) => {
          const pem = key.getPublicKey();
          const kept = previous.get(key.kid ?? '');
          const same = kept !== undefined && kept.export({ type: 'spki', format: 'pem' }) === pem;
          return [key.kid ?? '', same ? kept : createPublicKey(pem)];
        }),
      );
      fetchedAt = started;
    })().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  };

  return {
    mode: 'jwks',
    // Asymmetric only: an HS256 token "signed" with the public key is refused (algorithm confusion).
    algorithms: ['RS256', 'ES256'],
    async keyFor(token: string): Promise<KeyObject> {
      // An old key set is fetched again first; if the provider cannot be reached, the keys in hand
      // keep serving (a withdrawn key then lasts as long as the outage).
      if (Date.now() - fetchedAt > MAX_KEY_SET_AGE_MS) await refresh().catch(() => undefined);
      const kid = jwt.decode(token, { complete: true })?.header.kid ?? '';
      const known = keys.get(kid);
      if (known !== undefined) return known;
      if ((absent.get(kid) ?? 0) > Date.now()) throw unknownKid();
      const arrived = Date.now();
      // A refresh already running may have started before this token arrived: then wait for the next.
      while (fetchedAt < arrived) {
        try {
          await refresh();
        } catch {
          throw jwksUnavailable();
        }
      }
      const found = keys.get(kid);
      if (found !== undefined) return found;
      if (absent.size >= MAX_ABSENT) absent.clear();
      absent.set(kid, Date.now() + ABSENT_FOR_MS);
      throw unknownKid();
    },
  };
}
