import { scimProblem } from './scim-error.js';
import { parseAttrPath, parseFilter, type AttrPath, type Filter } from './scim-filter.js';
import { PATCH_SCHEMA } from './scim-schemas.js';

/*
 * A PATCH request's body (RFC 7644 §3.5.2) read as identity providers send it: `op` in any letter
 * case, `Operations` and its keys in any case, paths parsed (`attr`, `attr.sub`, `attr[filter]`,
 * `attr[filter].sub`, each maybe prefixed by a schema URN). Applying the operations is
 * `scim-patch.ts`'s.
 */

export type PatchOpName = 'add' | 'replace' | 'remove';

export interface PatchOperation {
  readonly op: PatchOpName;
  readonly path?: PatchPath;
  readonly value?: unknown;
}

/** `attr`, `attr.sub`, `attr[filter]`, `attr[filter].sub`, each maybe prefixed by a schema URN. */
export interface PatchPath {
  readonly text: string;
  readonly attr: AttrPath;
  readonly filter?: Filter;
  readonly sub?: string;
}

/** At most this many operations in one PATCH (each may carry up to 1 000 members). */
export const MAX_OPERATIONS = 1000;

/** Keys that name no attribute and would reach an object's prototype: refused wherever a client names a key. */
export const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export function invalidPath(message: string): Error {
  return scimProblem('invalidPath', message, 'path');
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A key of the request's own object, read case-insensitively (`Operations`, `operations`). */
function field(object: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(object).find((candidate) => candidate.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : object[key];
}

export function parsePatchPath(text: string): PatchPath {
  if (text.length === 0 || text.length > 1024) throw invalidPath('The path must be 1–1024 characters');
  const open = text.indexOf('[');
  let head = text;
  let filter: Filter | undefined;
  let sub: string | undefined;
  if (open !== -1) {
    const close = text.lastIndexOf(']');
    if (close < open) throw invalidPath(`The path ${JSON.stringify(text)} opens "[" without closing it`);
    head = text.slice(0, open);
    filter = parseFilter(text.slice(open + 1, close));
    const rest = text.slice(close + 1);
    if (rest !== '') {
      if (!/^\.[A-Za-z][\w$-]*$/.test(rest))
        throw invalidPath(`${JSON.stringify(rest)} after "]" is not a sub-attribute`);
      sub = rest.slice(1).toLowerCase();
    }
  }
  const attr = parseAttrPath(head);
  if (attr === undefined) throw invalidPath(`${JSON.stringify(text)} is not an attribute path`);
  for (const part of [attr.attr, attr.sub, sub])
    if (part !== undefined && FORBIDDEN_KEYS.has(part)) throw invalidPath(`${part} names no attribute`);
  if (filter !== undefined && attr.sub !== undefined)
    throw invalidPath(`A value filter follows ${head}: name it without a sub-attribute`);
  return { text, attr, ...(filter === undefined ? {} : { filter }), ...(sub === undefined ? {} : { sub }) };
}

/** The body of a PATCH, normalised: each operation's name lower-cased and its path parsed. */
export function parsePatchBody(body: unknown): PatchOperation[] {
  if (!isRecord(body)) throw scimProblem('invalidSyntax', 'The body must be a PatchOp object');
  const schemas = field(body, 'schemas');
  if (schemas !== undefined && !(Array.isArray(schemas) && schemas.includes(PATCH_SCHEMA)))
    throw scimProblem('invalidSyntax', `schemas must hold ${PATCH_SCHEMA}`, 'schemas');
  const operations = field(body, 'Operations');
  if (!Array.isArray(operations) || operations.length === 0)
    throw scimProblem('invalidSyntax', 'Operations must be a non-empty array', 'Operations');
  if (operations.length > MAX_OPERATIONS)
    throw scimProblem('invalidValue', `At most ${MAX_OPERATIONS} operations in one PATCH`, 'Operations');
  return operations.map((operation: unknown, index) => {
    if (!isRecord(operation))
      throw scimProblem('invalidSyntax', `Operations[${index}] must be an object`, 'Operations');
    const op = field(operation, 'op');
    const name = typeof op === 'string' ? op.toLowerCase() : '';
    if (name !== 'add' && name !== 'replace' && name !== 'remove')
      throw scimProblem(
        'invalidSyntax',
        `Operations[${index}].op must be add, replace or remove (any letter case)`,
        'op',
      );
    const path = field(operation, 'path');
    if (path !== undefined && typeof path !== 'string') throw invalidPath(`Operations[${index}].path must be a string`);
    const value = field(operation, 'value');
    if (name !== 'remove' && value === undefined)
      throw scimProblem('invalidValue', `Operations[${index}] (${name}) needs a value`, 'value');
    if (name === 'remove' && path === undefined)
      throw scimProblem('noTarget', `Operations[${index}] (remove) needs a path`, 'path');
    return {
      op: name,
      ...(path === undefined || path === '' ? {} : { path: parsePatchPath(path) }),
      ...(value === undefined ? {} : { value }),
    };
  });
}
