import fc from 'fast-check';
import { resolve, type Components, type Schema } from '../support/schema-check.js';

const INJECTED_KEYS = ['id', 'owner', 'is_deleted', 'created_by', 'version', '__proto__x', 'unexpected'];
const BOUNDARY_NUMBERS = [0, -1, 1, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, 0.5, 99_999_999];

/** A value that fits the schema (sizes kept small; ids small enough to hit existing rows). */
export function valid(schema: Schema, components: Components, depth = 0): fc.Arbitrary<unknown> {
  const resolved = resolve(schema, components);
  if (resolved.enum !== undefined) return fc.constantFrom(...resolved.enum);
  const orNull = (arbitrary: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
    resolved.nullable === true ? fc.option(arbitrary, { nil: null, freq: 5 }) : arbitrary;
  switch (resolved.type) {
    case 'string':
      if (resolved.format === 'date-time')
        return orNull(
          fc
            .integer({ min: -86_400, max: 400 * 86_400 })
            .map((seconds) => new Date(Date.now() + seconds * 1000).toISOString()),
        );
      return orNull(
        fc.string({ minLength: resolved.minLength ?? 0, maxLength: Math.min(resolved.maxLength ?? 40, 40) }),
      );
    case 'number':
    case 'integer': {
      // Small numbers (ids that exist), but never below the schema's minimum (a duration of 300 s and more).
      const min = resolved.minimum ?? 1;
      return orNull(fc.integer({ min, max: Math.min(resolved.maximum ?? Infinity, Math.max(min, 1) + 59) }));
    }
    case 'boolean':
      return orNull(fc.boolean());
    case 'array':
      return fc.array(resolved.items === undefined ? fc.constant(null) : valid(resolved.items, components, depth + 1), {
        minLength: resolved.minItems ?? 0,
        maxLength: Math.min(resolved.maxItems ?? 4, 4),
      });
    case undefined:
    default: {
      if (depth > 3 || resolved.properties === undefined)
        return orNull(
          fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 10 }), fc.integer()), {
            maxKeys: 3,
          }),
        );
      const shape = Object.fromEntries(
        Object.entries(resolved.properties).map(([key, property]) => [key, valid(property, components, depth + 1)]),
      );
      return orNull(fc.record(shape, { requiredKeys: resolved.required ?? [] }));
    }
  }
}

/** A body derived from the schema, then mutated: missing and extra fields, wrong types, boundary numbers, huge strings. */
export function body(schema: Schema | undefined, components: Components): fc.Arbitrary<unknown> {
  const base = schema === undefined ? fc.constant({}) : valid(schema, components);
  const asObject = base.map((value) =>
    typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {},
  );
  return fc.oneof(
    { weight: 4, arbitrary: base },
    {
      weight: 2,
      arbitrary: fc.tuple(asObject, fc.nat()).map(([value, pick]) => {
        const keys = Object.keys(value);
        const copy = { ...value };
        if (keys.length > 0) delete copy[keys[pick % keys.length] ?? ''];
        return copy;
      }),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(asObject, fc.constantFrom(...INJECTED_KEYS), fc.jsonValue({ maxDepth: 2 }))
        .map(([value, key, extra]) => ({ ...value, [key]: extra })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(asObject, fc.nat(), fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(...BOUNDARY_NUMBERS)))
        .map(([value, pick, wrong]) => {
          const keys = Object.keys(value);
          return keys.length === 0 ? wrong : { ...value, [keys[pick % keys.length] ?? 'x']: wrong };
        }),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(asObject, fc.nat(), fc.integer({ min: 1_000, max: 300_000 })).map(([value, pick, size]) => {
        const keys = Object.keys(value);
        return { ...value, [keys.length === 0 ? 'x' : (keys[pick % keys.length] ?? 'x')]: 'y'.repeat(size) };
      }),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );
}

/** A path parameter: mostly small ids, sometimes garbage. */
export const pathValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 60 }).map(String) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '0',
      '-1',
      'abc',
      '1.5',
      '1e3',
      '99999999999999999999',
      '9007199254740993',
      '00000000-0000-4000-8000-000000000000',
      ' ',
    ),
  },
);

/** A list query: known parameters with good and bad values, and junk ones. */
export const listQuery: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    page: fc.oneof(fc.integer({ min: 1, max: 5 }).map(String), fc.constantFrom('0', '-2', 'x', '1e9')),
    page_size: fc.oneof(fc.integer({ min: 1, max: 100 }).map(String), fc.constantFrom('0', '101', '100000', 'ten')),
    sort: fc.oneof(
      fc.constantFrom('id:asc', 'id:desc', 'created_at:desc', 'nope:asc', 'id:sideways', 'id:asc,id:desc'),
    ),
    q: fc.string({ minLength: 0, maxLength: 220 }),
    include_deleted: fc.constantFrom('true', 'false', 'yes'),
    count: fc.constantFrom('exact', 'auto', 'all'),
    user_id: fc.oneof(fc.integer({ min: 1, max: 60 }).map(String), fc.constantFrom('x', '-1')),
    is_active: fc.constantFrom('true', 'false', '1'),
    junk: fc.string({ maxLength: 5 }),
  },
  { requiredKeys: [] },
);
