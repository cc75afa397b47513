import { createSecretKey } from 'node:crypto';
import { VerifiedTokens } from '../../src/platform/auth/verified-tokens.js';

const key = createSecretKey(Buffer.from('unit-secret-0123456789abcdef0123456789', 'utf8'));
const otherKey = createSecretKey(Buffer.from('unit-secret-0123456789abcdef0123456789', 'utf8'));
const now = (): number => Math.floor(Date.now() / 1000);

describe('VerifiedTokens: claims of tokens already verified, per instance', () => {
  it('gives the claims back only for the same token and the very same key object, before exp', () => {
    const tokens = new VerifiedTokens();
    tokens.remember('t1', key, { sub: '1', exp: now() + 60 });
    expect(tokens.get('t1', key)).toMatchObject({ sub: '1' });
    expect(tokens.get('t2', key)).toBeUndefined();
    // An equal secret in another KeyObject (a reload, a rotation) verifies from scratch.
    expect(tokens.get('t1', otherKey)).toBeUndefined();
    expect(tokens.size).toBe(0);
  });

  it('forgets a token once the current second reaches its exp (jsonwebtoken’s rule)', () => {
    const tokens = new VerifiedTokens();
    tokens.remember('expiring', key, { exp: now() });
    expect(tokens.get('expiring', key)).toBeUndefined();
    tokens.remember('no-exp', key, { sub: '1' });
    expect(tokens.get('no-exp', key)).toBeUndefined();
  });

  it('holds at most its capacity, dropping the oldest first', () => {
    const tokens = new VerifiedTokens(2);
    for (const token of ['a', 'b', 'c']) tokens.remember(token, key, { exp: now() + 60 });
    expect(tokens.size).toBe(2);
    expect(tokens.get('a', key)).toBeUndefined();
    expect(tokens.get('c', key)).toBeDefined();
  });
});
