// The physical floor of token verification (issue 39): HS256 checked with node:crypto alone, an
// HMAC-SHA256 over `header.payload` compared in constant time, then `exp`, `iss`, `aud` and `sid`.
// No library, no cache of verified tokens: every request pays it, as a bare server would.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** A verifier for `secret`: answers the claims, or undefined for any token it does not accept. */
export function hs256Verifier(secret, { issuer, audience }) {
  const key = Buffer.from(secret, 'utf8');
  return (token) => {
    const first = token.indexOf('.');
    const second = token.indexOf('.', first + 1);
    if (first < 0 || second < 0 || token.indexOf('.', second + 1) >= 0) return undefined;
    const header = JSON.parse(Buffer.from(token.slice(0, first), 'base64url').toString('utf8'));
    if (header.alg !== 'HS256') return undefined;
    const expected = createHmac('sha256', key).update(token.slice(0, second)).digest();
    const given = Buffer.from(token.slice(second + 1), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let claims;
    try {
      claims = JSON.parse(Buffer.from(token.slice(first + 1, second), 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= Date.now()) return undefined;
    if (claims.iss !== issuer) return undefined;
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audiences.includes(audience)) return undefined;
    if (typeof claims.sid !== 'string' || typeof claims.sub !== 'string') return undefined;
    return claims;
  };
}
