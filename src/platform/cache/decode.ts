/**
 * Decoders of cached JSON: each answers the value in its shape, or undefined for anything else
 * (truncated, not JSON, the wrong type), which the cache-aside wrapper treats as a miss. Checks
 * are structural and cheap: they guard the fields code reads, not every field of a projection.
 */
export type Decode<T> = (json: string) => T | undefined;

type Shape = Readonly<
  Record<string, 'number' | 'string' | 'boolean' | 'object' | 'array' | 'array|null' | 'string|null' | 'number|null'>
>;

function matches(value: unknown, shape: Shape): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  return Object.entries(shape).every(([key, kind]) => {
    const field = record[key];
    if (kind === 'array') return Array.isArray(field);
    if (kind === 'array|null') return field === null || Array.isArray(field);
    if (kind === 'string|null') return field === null || typeof field === 'string';
    if (kind === 'number|null') return field === null || typeof field === 'number';
    if (kind === 'object') return typeof field === 'object' && field !== null;
    return typeof field === kind;
  });
}

function parse(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

/** An object with at least these fields of these types. */
export function objectOf<T>(shape: Shape): Decode<T> {
  return (json) => {
    const value = parse(json);
    return matches(value, shape) ? (value as T) : undefined;
  };
}

/** An array whose every element has at least these fields. */
export function arrayOf<T>(shape: Shape): Decode<readonly T[]> {
  return (json) => {
    const value = parse(json);
    return Array.isArray(value) && value.every((item) => matches(item, shape)) ? (value as T[]) : undefined;
  };
}
