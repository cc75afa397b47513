import { scimProblem } from './scim-error.js';
import type { AttrPath, Filter } from './scim-filter.js';
import { matches } from './scim-matches.js';
import {
  FORBIDDEN_KEYS,
  invalidPath,
  isRecord,
  parsePatchPath,
  type PatchOperation,
  type PatchOpName,
  type PatchPath,
} from './scim-patch-body.js';

/*
 * PATCH (RFC 7644 §3.5.2) applied to a resource's SCIM document, as identity providers really
 * send it: `op` in any letter case, a `replace` without `path` whose value has dotted or
 * URN-prefixed keys, paths with value filters. The document is a plain object holding only the
 * attributes of its schema (looked up case-insensitively), so no key the client chooses is ever
 * assigned: `__proto__` and its kin are refused outright (invalidPath), other unknown attributes
 * are ignored, as identity providers send attributes a service provider does not keep (Entra ID's
 * `title`, `addresses`, `preferredLanguage` by default).
 */

export type Doc = Record<string, unknown>;

/** An attribute of a document's schema: its canonical name, whether it holds a list, its sub-attributes. */
export interface DocAttribute {
  readonly name: string;
  readonly multi?: boolean;
  readonly subs?: readonly string[];
  /** `id`, `meta`, `groups`: a change is refused (mutability). */
  readonly readOnly?: boolean;
}

export interface DocSchema {
  readonly urn: string;
  readonly attributes: readonly DocAttribute[];
  /** An extension's attributes, kept under its URN in the document. */
  readonly extension?: { readonly urn: string; readonly attributes: readonly DocAttribute[] };
}

/** The attribute a path names in the schema (core, or the extension by its URN); undefined when unknown. */
export function attributeOf(
  schema: DocSchema,
  path: AttrPath,
): { readonly attribute: DocAttribute; readonly urn: string } | undefined {
  const extension = schema.extension;
  const inExtension = extension !== undefined && path.urn === extension.urn.toLowerCase();
  if (path.urn !== undefined && !inExtension && path.urn !== schema.urn.toLowerCase()) return undefined;
  const attributes = inExtension ? extension.attributes : schema.attributes;
  const attribute = attributes.find((candidate) => candidate.name.toLowerCase() === path.attr);
  return attribute === undefined ? undefined : { attribute, urn: inExtension ? extension.urn : schema.urn };
}

function holderOf(doc: Doc, schema: DocSchema, urn: string): Doc {
  if (urn === schema.urn) return doc;
  const existing = doc[urn];
  if (isRecord(existing)) return existing;
  const created: Doc = {};
  doc[urn] = created;
  return created;
}

function canonicalSub(attribute: DocAttribute, sub: string): string | undefined {
  return attribute.subs?.find((candidate) => candidate.toLowerCase() === sub);
}

/** A complex value keeping only the attribute's sub-attributes, under their canonical names. */
function complexValue(attribute: DocAttribute, value: unknown, where: string): Doc {
  if (!isRecord(value)) throw scimProblem('invalidValue', `${where} must be an object`, attribute.name);
  const result: Doc = {};
  for (const [key, child] of Object.entries(value)) {
    if (FORBIDDEN_KEYS.has(key.toLowerCase())) throw invalidPath(`${key} names no attribute`);
    const name = canonicalSub(attribute, key.toLowerCase());
    if (name !== undefined) result[name] = child;
  }
  return result;
}

/** The most values a multi-valued attribute of a user holds (people have a few emails and numbers). */
export const MAX_VALUES = 20;

function tooManyValues(attribute: DocAttribute): Error {
  return scimProblem('invalidValue', `${attribute.name} holds at most ${MAX_VALUES} values`, attribute.name);
}

function valuesOf(attribute: DocAttribute, value: unknown): Doc[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length > MAX_VALUES) throw tooManyValues(attribute);
  return list.map((item, index) => complexValue(attribute, item, `${attribute.name}[${index}]`));
}

/** The attribute-value pairs an `eq` filter fixes (`type eq "work"` → `{ type: 'work' }`): a new value made where none matched. */
function fixedBy(filter: Filter, attribute: DocAttribute): Doc {
  if (filter.kind === 'compare' && filter.op === 'eq') {
    const name = canonicalSub(attribute, filter.path.attr);
    return name === undefined ? {} : { [name]: filter.value };
  }
  if (filter.kind === 'and') return Object.assign({}, ...filter.terms.map((term) => fixedBy(term, attribute))) as Doc;
  return {};
}

/**
 * Applies one operation to the document in place. Attributes the schema does not have are
 * ignored; read-only ones are refused (mutability).
 */
export function applyOperation(doc: Doc, schema: DocSchema, operation: PatchOperation): void {
  const { op, path, value } = operation;
  if (path === undefined) {
    // No path: the value's keys are the paths ("name.givenName", an extension's URN, or plain names).
    if (!isRecord(value)) throw scimProblem('invalidValue', `A ${op} without path needs an object value`, 'value');
    for (const [key, child] of Object.entries(value)) {
      if (key.toLowerCase() === 'schemas') continue;
      const extension = schema.extension;
      if (extension !== undefined && key.toLowerCase() === extension.urn.toLowerCase() && isRecord(child)) {
        for (const [name, inner] of Object.entries(child))
          applyOperation(doc, schema, { op, path: parsePatchPath(`${extension.urn}:${name}`), value: inner });
        continue;
      }
      applyOperation(doc, schema, { op, path: parsePatchPath(key), value: child });
    }
    return;
  }
  const found = attributeOf(schema, path.attr);
  if (found === undefined) return;
  const { attribute, urn } = found;
  if (attribute.readOnly === true)
    throw scimProblem('mutability', `${attribute.name} cannot be changed`, attribute.name);
  const holder = holderOf(doc, schema, urn);
  const sub = path.sub ?? path.attr.sub;
  if (attribute.multi === true) {
    applyToList(holder, attribute, path, op, value, sub);
    const list = holder[attribute.name];
    if (Array.isArray(list) && list.length > MAX_VALUES) throw tooManyValues(attribute);
    return;
  }
  if (path.filter !== undefined) throw invalidPath(`${attribute.name} holds one value: it takes no value filter`);
  if (sub !== undefined) {
    const name = attribute.subs === undefined ? undefined : canonicalSub(attribute, sub);
    if (name === undefined) return;
    const current = isRecord(holder[attribute.name]) ? (holder[attribute.name] as Doc) : {};
    if (op === 'remove') delete current[name];
    else current[name] = value;
    holder[attribute.name] = current;
    return;
  }
  if (op === 'remove') delete holder[attribute.name];
  else if (attribute.subs !== undefined) {
    // A complex attribute: the sub-attributes given replace or add to those it has (RFC 7644 §3.5.2.3).
    const current = isRecord(holder[attribute.name]) ? (holder[attribute.name] as Doc) : {};
    holder[attribute.name] = { ...current, ...complexValue(attribute, value, attribute.name) };
  } else holder[attribute.name] = value;
}

function applyToList(
  holder: Doc,
  attribute: DocAttribute,
  path: PatchPath,
  op: PatchOpName,
  value: unknown,
  sub: string | undefined,
): void {
  const list = Array.isArray(holder[attribute.name]) ? [...(holder[attribute.name] as Doc[])] : [];
  const subName = sub === undefined ? undefined : canonicalSub(attribute, sub);
  if (sub !== undefined && subName === undefined) return;
  const selected = (item: Doc): boolean => path.filter === undefined || matches(path.filter, item);
  if (op === 'remove') {
    if (subName !== undefined)
      holder[attribute.name] = list.map((item) => (selected(item) ? omit(item, subName) : item));
    else if (path.filter !== undefined) holder[attribute.name] = list.filter((item) => !selected(item));
    else if (value !== undefined) {
      // Values named in `value` (as Entra ID removes members): those equal by `value` go.
      const gone = new Set(valuesOf(attribute, value).map((item) => valueKey(item)));
      holder[attribute.name] = list.filter((item) => !gone.has(valueKey(item)));
    } else holder[attribute.name] = [];
    return;
  }
  if (subName !== undefined) {
    const hits = list.filter(selected);
    // A filter that matches nothing makes the value it describes (`emails[type eq "work"].value`).
    if (hits.length === 0)
      list.push({ ...(path.filter === undefined ? {} : fixedBy(path.filter, attribute)), [subName]: value });
    else for (const item of hits) item[subName] = value;
    holder[attribute.name] = list.map((item) => ({ ...item }));
    return;
  }
  const given = valuesOf(attribute, value);
  if (path.filter !== undefined) {
    const kept = list.filter((item) => !selected(item));
    const merged = list.filter(selected).map((item) => ({ ...item, ...given[0] }));
    holder[attribute.name] = merged.length === 0 ? [...kept, ...given] : [...kept, ...merged];
    return;
  }
  if (op === 'replace') {
    holder[attribute.name] = given;
    return;
  }
  // add: new values join; one equal by `value` to a present one is not added twice.
  const present = new Set(list.map((item) => valueKey(item)));
  holder[attribute.name] = [...list, ...given.filter((item) => !present.has(valueKey(item)))];
}

function omit(item: Doc, name: string): Doc {
  const copy = { ...item };
  delete copy[name];
  return copy;
}

/**
 * A POST or PUT body as a document of the schema: attribute names read case-insensitively, dotted
 * and URN-prefixed keys placed, unknown attributes left out. `id` is refused when it names another
 * resource than `targetId` (mutability); `meta`, `schemas` and read-only lists are ignored, as
 * RFC 7644 §3.5.1 asks of read-only attributes in a request.
 */
export function bodyDoc(schema: DocSchema, body: unknown, targetId?: string): Doc {
  if (!isRecord(body)) throw scimProblem('invalidSyntax', 'The body must be a JSON object');
  const given: Doc = {};
  for (const [key, value] of Object.entries(body)) {
    const lower = key.toLowerCase();
    if (FORBIDDEN_KEYS.has(lower)) throw invalidPath(`${key} names no attribute`);
    if (lower === 'id') {
      if (targetId === undefined || String(value) !== targetId)
        throw scimProblem(
          'mutability',
          targetId === undefined ? 'id is assigned by the service provider' : `id is ${targetId}: it cannot be changed`,
          'id',
        );
      continue;
    }
    if (lower === 'schemas' || lower === 'meta') continue;
    const found = attributeOf(schema, { attr: lower.includes('.') || lower.startsWith('urn:') ? '' : lower });
    if (found?.attribute.readOnly === true) continue;
    given[key] = value;
  }
  const doc: Doc = {};
  applyOperation(doc, schema, { op: 'replace', value: given });
  return doc;
}

/** A value compared by its `value` sub-attribute, case-insensitively (an object or list there names nothing). */
function valueKey(item: Doc): string {
  const value = item.value;
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value).toLowerCase()
    : '';
}
