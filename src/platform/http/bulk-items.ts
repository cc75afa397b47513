import { applyDecorators, type Type as Class } from '@nestjs/common';
import { Type } from 'class-transformer';
import { getMetadataStorage, IsObject, ValidateNested } from 'class-validator';

type Check = (value: unknown) => boolean;
/** True when one item passes exactly the rules class-validator would apply. */
type ItemCheck = (item: unknown) => boolean;

interface ItemsProperty {
  readonly property: string;
  /** The compiled check; undefined when the item's rules have no fast path. */
  readonly check: () => ItemCheck | undefined;
}

const ITEMS = new WeakMap<object, ItemsProperty>();

/**
 * `items: ItemDto[]` of a bulk body: validated as `@ValidateNested({ each: true })` with
 * `@Type(() => ItemDto)`, and registered for the pipe's fast path. class-validator costs about
 * 20 µs per nested item (a 1000-item bulk spent more on validation than on its SQL, measured):
 * the pipe first runs a check compiled from the item's own rules, and only a body with a bad
 * item goes through class-validator, which then reports exactly what it always has.
 */
export function EachItem(itemClass: Class): PropertyDecorator {
  return (target, property) => {
    applyDecorators(
      // An item that is an array would be checked element by element (an empty one not at all).
      IsObject({ each: true, message: `each item of ${String(property)} must be an object` }),
      ValidateNested({ each: true }),
      Type(() => itemClass),
    )(target, property);
    // Compiled on first use: the item class's own decorators have all been applied by then.
    let compiled: ItemCheck | undefined | null = null;
    ITEMS.set(target.constructor, {
      property: String(property),
      check: () => (compiled === null ? (compiled = compileItemCheck(itemClass)) : compiled),
    });
  };
}

/**
 * The body with its items validated by the fast path: `items` stays the parsed array and the
 * rest of the body (with one item, so array rules still apply to something) goes through
 * class-validator. Undefined when the fast path does not apply or an item fails it.
 */
export function splitBulkBody(
  metatype: unknown,
  body: unknown,
): { head: Record<string, unknown>; property: string; items: unknown[] } | undefined {
  if (typeof metatype !== 'function') return undefined;
  const spec = ITEMS.get(metatype);
  const check = spec?.check();
  if (spec === undefined || check === undefined) return undefined;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const items = (body as Record<string, unknown>)[spec.property];
  if (!Array.isArray(items) || items.length < 2) return undefined;
  if (items.length > arrayLimit(metatype, spec.property)) return undefined;
  for (const item of items) if (!check(item)) return undefined;
  return { head: { ...body, [spec.property]: items.slice(0, 1) }, property: spec.property, items };
}

/** Rules of the items property that judge the array or each item's shape, which the fast path checks too. */
const ARRAY_RULES = new Set(['isArray', 'arrayMinSize', 'arrayMaxSize', 'isObject']);

/**
 * The most items the fast path takes: the property's `arrayMaxSize`; 0 (no fast path) when the
 * property has any other rule, which would then only ever see the one item class-validator gets.
 */
function arrayLimit(metatype: object, property: string): number {
  const rules = getMetadataStorage()
    .getTargetValidationMetadatas(metatype as Class, '', true, false)
    .filter((meta) => meta.propertyName === property && meta.type !== 'nestedValidation');
  if (rules.some((meta) => !ARRAY_RULES.has(meta.name ?? ''))) return 0;
  const limits = rules
    .filter((meta) => meta.name === 'arrayMaxSize')
    .map((meta) => Number((meta.constraints as unknown[] | undefined)?.[0]));
  return limits.length === 0 ? 0 : Math.min(...limits);
}

/**
 * One item's rules (`isInt`, `min`, `max`, whitelisting) as a plain function; undefined when the
 * item class uses any other rule, groups or conditions (those keep class-validator alone).
 */
export function compileItemCheck(itemClass: Class): ItemCheck | undefined {
  const rules = new Map<string, Check[]>();
  for (const meta of getMetadataStorage().getTargetValidationMetadatas(itemClass, '', true, false)) {
    if (meta.type !== 'customValidation' || meta.each || (meta.groups ?? []).length > 0) return undefined;
    const check = ruleCheck(meta.name, meta.constraints as unknown[] | undefined);
    if (check === undefined) return undefined;
    const list = rules.get(meta.propertyName) ?? [];
    list.push(check);
    rules.set(meta.propertyName, list);
  }
  if (rules.size === 0) return undefined;
  const fields = [...rules];
  return (item) => {
    // A plain object as JSON.parse makes it: class-transformer copies own keys only, so an
    // inherited value must not count here either.
    if (typeof item !== 'object' || item === null || Object.getPrototypeOf(item) !== Object.prototype) return false;
    // Whitelisting: a key without rules is an unknown field.
    let known = 0;
    for (const [property, checks] of fields) {
      const own = Object.hasOwn(item, property);
      const value = own ? (item as Record<string, unknown>)[property] : undefined;
      if (own) known += 1;
      for (const check of checks) if (!check(value)) return false;
    }
    return Object.keys(item).length === known;
  };
}

function ruleCheck(name: string | undefined, constraints: unknown[] | undefined): Check | undefined {
  const bound = Number(constraints?.[0]);
  switch (name ?? '') {
    case 'isInt':
      return (value) => Number.isInteger(value);
    case 'min':
      return Number.isFinite(bound) ? (value) => typeof value === 'number' && value >= bound : undefined;
    case 'max':
      return Number.isFinite(bound) ? (value) => typeof value === 'number' && value <= bound : undefined;
    default:
      return undefined;
  }
}
