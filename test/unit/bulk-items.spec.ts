import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { ArrayMaxSize, ArrayUnique, validateSync } from 'class-validator';
import { compileItemCheck, EachItem, splitBulkBody } from '../../src/platform/http/bulk-items.js';
import { BulkAuthorityPermissionsDto, BulkItemDto } from '../../src/grants/dto/authority-permission.dto.js';
import { BulkDeleteDto, BulkDeleteItemDto } from '../../src/inbox/inbox.dto.js';

const OPTIONS = { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true };

/** A small deterministic generator: the same run every time, many shapes of wrong. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

const VALUES: unknown[] = [
  1,
  2,
  7,
  2_147_483_647,
  2_147_483_648,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  0,
  -1,
  1.5,
  Number.NaN,
  '1',
  '',
  null,
  true,
  [],
  {},
  [1],
  1e21,
];

function randomItem(next: () => number, fields: readonly string[]): unknown {
  const roll = next();
  if (roll < 0.03) return VALUES[Math.floor(next() * VALUES.length)];
  const item: Record<string, unknown> = {};
  for (const field of fields) if (next() > 0.05) item[field] = VALUES[Math.floor(next() * VALUES.length)];
  if (next() < 0.05) item.extra = 1;
  if (next() < 0.02) item['constructor'] = 1;
  return item;
}

describe('bulk items: the compiled check never accepts what class-validator refuses', () => {
  it.each<[string, new () => object, readonly string[]]>([
    ['BulkItemDto', BulkItemDto, ['authority_id', 'permission_id']],
    ['BulkDeleteItemDto', BulkDeleteItemDto, ['id']],
  ])('%s, 5000 random items', (_name, itemClass, fields) => {
    const check = compileItemCheck(itemClass);
    expect(check).toBeDefined();
    const next = random(42);
    let valid = 0;
    for (let run = 0; run < 5000; run += 1) {
      const item = randomItem(next, fields);
      const isObject = typeof item === 'object' && item !== null && !Array.isArray(item);
      const reference = isObject && validateSync(plainToInstance(itemClass, item), OPTIONS).length === 0;
      const fast = check?.(item) === true;
      // Never accepts what class-validator refuses. It may refuse an odd item class-validator lets
      // through (a "constructor" key): such a body takes the full path and is judged there.
      if (fast) expect([item, reference]).toEqual([item, true]);
      else if (reference) expect(Object.keys(item)).toContain('constructor');
      if (reference) valid += 1;
    }
    // The generator produced both verdicts often enough for the comparison to mean something.
    expect(valid).toBeGreaterThan(50);
    expect(valid).toBeLessThan(4950);
  });

  it('splits a bulk body only when every item passes and the array is within its limit', () => {
    const items = [
      { authority_id: 1, permission_id: 2 },
      { authority_id: 3, permission_id: 4 },
    ];
    expect(splitBulkBody(BulkAuthorityPermissionsDto, { items, reason: 'r' })).toEqual({
      head: { items: [items[0]], reason: 'r' },
      property: 'items',
      items,
    });
    expect(
      splitBulkBody(BulkAuthorityPermissionsDto, { items: [...items, { authority_id: '5', permission_id: 1 }] }),
    ).toBeUndefined();
    const tooMany = Array.from({ length: 100_001 }, (_, index) => ({ id: index + 1 }));
    expect(splitBulkBody(BulkDeleteDto, { items: tooMany })).toBeUndefined();
    expect(splitBulkBody(BulkDeleteDto, { items: tooMany.slice(0, 100_000) })?.items).toHaveLength(100_000);
    // An item whose values are inherited, not its own, is not what class-transformer would copy.
    const inherited = Object.create({ authority_id: 1, permission_id: 2 }) as object;
    expect(compileItemCheck(BulkItemDto)?.(inherited)).toBe(false);
    expect(splitBulkBody(BulkAuthorityPermissionsDto, { items: [items[0], inherited] })).toBeUndefined();
    // A rule on the items array other than its size would only ever see one item: no fast path.
    class Unique {
      @EachItem(BulkItemDto) @ArrayUnique() @ArrayMaxSize(10) items!: object[];
    }
    expect(splitBulkBody(Unique, { items })).toBeUndefined();
    // Not a bulk body at all.
    expect(splitBulkBody(BulkItemDto, { authority_id: 1, permission_id: 2 })).toBeUndefined();
  });
});
