import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level, so `{a, b}` and `{b, a}` are the same request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** What makes two requests with one key "the same": the body, canonicalised (no body = `null`). */
export function requestFingerprint(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

const KEY = /^[\x20-\x7e]{1,255}$/;

/** `Idempotency-Key`: 1-255 printable ASCII characters (part 8). */
export function isValidIdempotencyKey(key: string): boolean {
  return KEY.test(key);
}
