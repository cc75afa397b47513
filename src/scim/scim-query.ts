import { scimProblem } from './scim-error.js';
import { parseFilter, type Filter } from './scim-filter.js';
import type { Doc } from './scim-patch.js';
import { LIST_SCHEMA, MAX_RESULTS } from './scim-schemas.js';

/** A list request's parameters (RFC 7644 §3.4.2): filter, 1-based startIndex, count, attribute selection. */
export interface ListQuery {
  readonly filter?: Filter;
  readonly startIndex: number;
  readonly count: number;
  readonly selection: Selection;
}

/** Which attributes a response keeps (RFC 7644 §3.9), lower-cased paths. */
export interface Selection {
  readonly attributes?: readonly string[];
  readonly excluded?: readonly string[];
}

function single(query: Record<string, unknown>, name: string): string | undefined {
  const key = Object.keys(query).find((candidate) => candidate.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : query[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw scimProblem('invalidValue', `${name} is given more than once`, name);
  return value;
}

function integer(query: Record<string, unknown>, name: string, fallback: number): number {
  const value = single(query, name);
  if (value === undefined || value === '') return fallback;
  if (!/^-?\d{1,9}$/.test(value)) throw scimProblem('invalidValue', `${name} must be an integer`, name);
  return Number(value);
}

function names(value: string | undefined): readonly string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  return value
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
}

export function selectionOf(query: Record<string, unknown>): Selection {
  const attributes = names(single(query, 'attributes'));
  const excluded = names(single(query, 'excludedAttributes'));
  return { ...(attributes === undefined ? {} : { attributes }), ...(excluded === undefined ? {} : { excluded }) };
}

/** Out-of-range startIndex and count are read as RFC 7644 §3.4.2.4 says: below 1 is 1, below 0 is 0, above the maximum the maximum. */
export function listQueryOf(query: Record<string, unknown>): ListQuery {
  const filterText = single(query, 'filter');
  const filter = filterText === undefined || filterText.trim() === '' ? undefined : parseFilter(filterText);
  return {
    ...(filter === undefined ? {} : { filter }),
    startIndex: Math.max(1, integer(query, 'startIndex', 1)),
    count: Math.min(MAX_RESULTS, Math.max(0, integer(query, 'count', MAX_RESULTS))),
    selection: selectionOf(query),
  };
}

/** Does the selection keep `name` (a top-level attribute; `id` and `schemas` always)? */
export function keeps(selection: Selection, name: string): boolean {
  const lower = name.toLowerCase();
  if (lower === 'id' || lower === 'schemas') return true;
  const bare = (path: string): string => path.replace(/^urn:.*:/, '').split('.')[0] ?? '';
  if (selection.attributes !== undefined)
    return selection.attributes.some((path) => bare(path) === lower || path === lower);
  return !(selection.excluded ?? []).some((path) => path === lower || (bare(path) === lower && !path.includes('.')));
}

/** The resource with only the attributes the selection keeps (a sub-attribute named alone keeps its parent with that sub-attribute). */
export function project(resource: Doc, selection: Selection): Doc {
  if (selection.attributes === undefined && selection.excluded === undefined) return resource;
  const kept: Doc = {};
  for (const [key, value] of Object.entries(resource)) {
    if (!keeps(selection, key)) continue;
    const subs = (selection.attributes ?? [])
      .filter((path) => path.startsWith(`${key.toLowerCase()}.`))
      .map((path) => path.slice(key.length + 1));
    const whole = (selection.attributes ?? []).includes(key.toLowerCase());
    kept[key] = subs.length > 0 && !whole ? pick(value, subs) : value;
  }
  return kept;
}

function pick(value: unknown, subs: readonly string[]): unknown {
  const one = (item: unknown): unknown =>
    typeof item === 'object' && item !== null
      ? Object.fromEntries(Object.entries(item).filter(([key]) => subs.includes(key.toLowerCase())))
      : item;
  return Array.isArray(value) ? value.map(one) : one(value);
}

/** A ListResponse (RFC 7644 §3.4.2). */
export function listResponse(total: number, startIndex: number, resources: readonly Doc[]): Doc {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}
