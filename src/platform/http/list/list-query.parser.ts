import { ApiError, type FieldProblem } from '../api-error.js';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  MAX_Q_LENGTH,
  type FilterType,
  type ListQuery,
  type ListSpec,
  type SortDirection,
} from './list-spec.js';

const INTEGER = /^(0|[1-9]\d{0,15})$/;
const ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/;
/** The instants whose ISO form has four year digits: anything else would be answered as `+010000-…`. */
const FIRST_INSTANT = Date.parse('0000-01-01T00:00:00.000Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * ISO-8601 date and time with an offset (part 1), a real calendar date, year 0001-9999, and an
 * instant that is still within year 9999 once the offset is applied: what PostgreSQL accepts too,
 * so a filter never reaches the database as an error, and what every answer can repeat in the
 * contract's form.
 */
export function isIsoTimestamp(value: string): boolean {
  const match = ISO_TIMESTAMP.exec(value);
  if (match === null) return false;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map((part) => Number(part ?? 0));
  const [sign, offsetHours, offsetMinutes] = [match[7], Number(match[8] ?? 0), Number(match[9] ?? 0)];
  if (year === undefined || month === undefined || day === undefined || year < 1) return false;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return false;
  if ((hour ?? 0) > 23 || (minute ?? 0) > 59 || (second ?? 0) > 59 || offsetHours > 14 || offsetMinutes > 59)
    return false;
  date.setUTCHours(hour ?? 0, minute ?? 0, second ?? 0);
  const instant = date.getTime() - (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  return instant >= FIRST_INSTANT && instant <= LAST_INSTANT;
}

class Problems {
  readonly list: FieldProblem[] = [];
  add(field: string, rule: string, message: string): void {
    this.list.push({ field, rule, message });
  }
}

function single(raw: Record<string, unknown>, name: string, problems: Problems): string | undefined {
  const value = raw[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    problems.add(name, 'single', `${name} must be given once`);
    return undefined;
  }
  return value;
}

function positiveInt(
  value: string | undefined,
  name: string,
  fallback: number,
  max: number,
  problems: Problems,
): number {
  if (value === undefined) return fallback;
  if (!INTEGER.test(value)) {
    problems.add(name, 'int', `${name} must be an integer`);
    return fallback;
  }
  const parsed = Number(value);
  if (parsed < 1) problems.add(name, 'min', `${name} must not be less than 1`);
  else if (parsed > max) problems.add(name, 'max', `${name} must not be greater than ${max}`);
  return parsed;
}

function bool(value: string, name: string, problems: Problems): boolean | undefined {
  if (value === 'true') return true;
  if (value === 'false') return false;
  problems.add(name, 'boolean', `${name} must be true or false`);
  return undefined;
}

function filterValue(
  value: string,
  name: string,
  type: FilterType,
  problems: Problems,
): string | number | boolean | undefined {
  if (type === 'int') {
    if (!INTEGER.test(value)) {
      problems.add(name, 'int', `${name} must be an integer`);
      return undefined;
    }
    return Number(value);
  }
  if (type === 'bool') return bool(value, name, problems);
  if (type === 'timestamp') {
    if (!isIsoTimestamp(value)) {
      problems.add(
        name,
        'dateString',
        `${name} must be an ISO-8601 timestamp with an offset, such as 2026-11-21T09:30:00.000Z`,
      );
      return undefined;
    }
    return value;
  }
  if (type === 'string') {
    if (value.length < 1 || value.length > 256) {
      problems.add(name, 'length', `${name} must be 1-256 characters`);
      return undefined;
    }
    if (value.includes('\u0000')) {
      problems.add(name, 'characters', `${name} must not contain a NUL character`);
      return undefined;
    }
    return value;
  }
  if (!type.enum.includes(value)) {
    problems.add(name, 'in', `${name} must be one of ${type.enum.join(', ')}`);
    return undefined;
  }
  return value;
}

function parseSort(value: string, spec: ListSpec, problems: Problems): ListQuery['sort'] {
  const terms: { field: string; direction: SortDirection }[] = [];
  for (const term of value.split(',')) {
    const [field = '', direction = 'asc', extra] = term.trim().split(':');
    if (extra !== undefined || (direction !== 'asc' && direction !== 'desc')) {
      problems.add('sort', 'format', `sort term "${term}" must be field:asc or field:desc`);
    } else if (!Object.hasOwn(spec.sort, field)) {
      problems.add('sort', 'field', `sort field "${field}" is not one of ${Object.keys(spec.sort).join(', ')}`);
    } else if (terms.some((existing) => existing.field === field)) {
      problems.add('sort', 'duplicate', `sort field "${field}" is given twice`);
    } else {
      terms.push({ field, direction });
    }
  }
  return terms;
}

const COMMON = new Set(['page', 'page_size', 'sort', 'q', 'include_deleted', 'count']);

/**
 * Parses a list route's query string against its spec. Every problem is collected and reported
 * at once as 400 `VALIDATION_FAILED`; unknown parameters are problems too.
 */
export function parseListQuery(spec: ListSpec, raw: Record<string, unknown>): ListQuery {
  const problems = new Problems();
  for (const name of Object.keys(raw)) {
    const known = COMMON.has(name) || Object.hasOwn(spec.filters, name);
    if (
      !known ||
      (name === 'include_deleted' && spec.deletedColumn === undefined) ||
      (name === 'q' && spec.search.length === 0)
    ) {
      problems.add(name, 'unknown', `${name} is not a parameter of this list`);
    }
  }
  const page = positiveInt(single(raw, 'page', problems), 'page', 1, Number.MAX_SAFE_INTEGER, problems);
  const pageSize = positiveInt(
    single(raw, 'page_size', problems),
    'page_size',
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    problems,
  );
  const sortText = single(raw, 'sort', problems);
  const sort = parseSort(sortText ?? spec.defaultSort, spec, problems);
  const q = single(raw, 'q', problems);
  if (q !== undefined && (q.length < 1 || q.length > MAX_Q_LENGTH)) {
    problems.add('q', 'length', `q must be 1-${MAX_Q_LENGTH} characters`);
  } else if (q?.includes('\u0000') === true) {
    problems.add('q', 'characters', 'q must not contain a NUL character');
  }
  const includeDeletedText = single(raw, 'include_deleted', problems);
  const includeDeleted =
    includeDeletedText === undefined ? false : (bool(includeDeletedText, 'include_deleted', problems) ?? false);
  const countText = single(raw, 'count', problems);
  if (countText !== undefined && countText !== 'exact' && countText !== 'auto') {
    problems.add('count', 'in', 'count must be exact or auto');
  }
  const filters: Record<string, string | number | boolean> = {};
  for (const [name, filter] of Object.entries(spec.filters)) {
    const value = single(raw, name, problems);
    if (value === undefined) continue;
    const parsed = filterValue(value, name, filter.type, problems);
    if (parsed !== undefined) filters[name] = parsed;
  }
  if (problems.list.length > 0) throw ApiError.validation(problems.list);
  return {
    page,
    page_size: pageSize,
    sort,
    q,
    include_deleted: includeDeleted,
    count: countText === 'exact' ? 'exact' : 'auto',
    filters,
  };
}
