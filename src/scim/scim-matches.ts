import type { Filter } from './scim-filter.js';

/** One value of a multi-valued attribute (an email, a member), as a plain object. */
type Value = object;

/** Does a value of a multi-valued attribute match a value filter (compared as SCIM does: case-insensitively)? */
export function matches(filter: Filter, item: Value): boolean {
  switch (filter.kind) {
    case 'and':
      return filter.terms.every((term) => matches(term, item));
    case 'or':
      return filter.terms.some((term) => matches(term, item));
    case 'not':
      return !matches(filter.filter, item);
    case 'valuePath':
      return false;
    case 'present': {
      const found = lookup(item, filter.path.attr);
      return found !== undefined && found !== null && found !== '';
    }
    case 'compare': {
      const found = lookup(item, filter.path.attr);
      const left = typeof found === 'string' ? found.toLowerCase() : found;
      const right = typeof filter.value === 'string' ? filter.value.toLowerCase() : filter.value;
      const same = left === right || (typeof left === 'boolean' && String(left) === right);
      switch (filter.op) {
        case 'eq':
          return same;
        case 'ne':
          return !same;
        case 'co':
          return typeof left === 'string' && typeof right === 'string' && left.includes(right);
        case 'sw':
          return typeof left === 'string' && typeof right === 'string' && left.startsWith(right);
        case 'ew':
          return typeof left === 'string' && typeof right === 'string' && left.endsWith(right);
        case 'gt':
        case 'ge':
        case 'lt':
        case 'le':
          return (
            typeof left === typeof right && left !== null && right !== null && compareOrder(left, right, filter.op)
          );
      }
    }
  }
}

function compareOrder(left: unknown, right: unknown, op: 'gt' | 'ge' | 'lt' | 'le'): boolean {
  const a = left as string | number;
  const b = right as string | number;
  return op === 'gt' ? a > b : op === 'ge' ? a >= b : op === 'lt' ? a < b : a <= b;
}

function lookup(item: Value, name: string): unknown {
  return Object.entries(item).find(([key]) => key.toLowerCase() === name)?.[1];
}
