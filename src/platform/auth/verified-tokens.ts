import type { KeyObject } from 'node:crypto';
import type { JwtPayload } from 'jsonwebtoken';
import { Recent } from '../cache/recent.js';

/** Longer tokens are verified every time (a portal's are well under 1 KiB). */
const MAX_TOKEN_LENGTH = 4096;

/**
 * Claims of tokens this instance has already verified, keyed by the token itself. A signature
 * check costs more than the rest of a cached read (profiled); a portal sends the same token on
 * every request for its whole life, so each token is verified once per instance. What a cached
 * verification cannot know is judged again on every request: the expiry here, and the session,
 * user and role by the auth context as before. A token is reused only with the very key object
 * that verified it, so a rotated secret or a retired JWKS key verifies from scratch.
 */
export class VerifiedTokens {
  private readonly entries: Recent<string, { key: unknown; payload: JwtPayload }>;

  constructor(capacity = 10_000) {
    // Oldest first: a flood of fresh tokens only costs the checks.
    this.entries = new Recent(capacity);
  }

  get(token: string, key: unknown): JwtPayload | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    // jsonwebtoken's rule: expired once the current whole second reaches `exp`.
    if (entry.key !== key || Math.floor(Date.now() / 1000) >= (entry.payload.exp ?? 0)) {
      this.entries.delete(token);
      return undefined;
    }
    return entry.payload;
  }

  remember(token: string, key: unknown, payload: JwtPayload): void {
    // Without an expiry there is nothing to re-judge cheaply: such tokens are always verified. An
    // outsized token is too (10 000 of them must not hold hundreds of megabytes).
    if (typeof payload.exp !== 'number' || !isKeyObject(key) || token.length > MAX_TOKEN_LENGTH) return;
    this.entries.set(token, { key, payload: Object.freeze({ ...payload }) });
  }

  get size(): number {
    return this.entries.size;
  }
}

function isKeyObject(key: unknown): key is KeyObject {
  return typeof key === 'object' && key !== null && 'type' in key;
}
