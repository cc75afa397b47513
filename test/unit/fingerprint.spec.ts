import {
  canonicalJson,
  isValidIdempotencyKey,
  requestFingerprint,
} from '../../src/platform/idempotency/fingerprint.js';

describe('idempotency fingerprint', () => {
  it('ignores key order at every level but not values or array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 2], c: null } })).toBe('{"a":{"c":null,"d":[1,2]},"b":1}');
    expect(requestFingerprint({ a: 1, b: 2 })).toBe(requestFingerprint({ b: 2, a: 1 }));
    expect(requestFingerprint({ a: [1, 2] })).not.toBe(requestFingerprint({ a: [2, 1] }));
    expect(requestFingerprint({ a: 1 })).not.toBe(requestFingerprint({ a: '1' }));
    expect(requestFingerprint(undefined)).toBe(requestFingerprint(null));
  });

  it('accepts 1-255 printable ASCII keys only', () => {
    expect(isValidIdempotencyKey('order-42:retry_1')).toBe(true);
    expect(isValidIdempotencyKey('x'.repeat(255))).toBe(true);
    expect(isValidIdempotencyKey('')).toBe(false);
    expect(isValidIdempotencyKey('x'.repeat(256))).toBe(false);
    expect(isValidIdempotencyKey('tab\there')).toBe(false);
    expect(isValidIdempotencyKey('clé')).toBe(false);
  });
});
