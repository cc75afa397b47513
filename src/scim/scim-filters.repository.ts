import type { EntityManager } from 'typeorm';
import { preparedQuery } from '../platform/database/prepared.js';
import { scimProblem } from './scim-error.js';
import type { AttrPath, CompareOp, Filter, FilterValue } from './scim-filter.js';

/*
 * A parsed SCIM filter compiled to a parameterised SQL condition. Only attributes of the registry
 * can be named; each maps to an indexed expression (the migration scim-users), so a lookup is an
 * index probe at any size. Values are bound parameters, never spliced into the text; `co`, `sw`
 * and `ew` escape LIKE's own wildcards.
 */

/** How an attribute compares: text (case-insensitive or exact), a numeric id, a boolean, a timestamp. */
export type AttributeKind = 'text' | 'exact' | 'id' | 'boolean' | 'timestamp';

export interface Attribute {
  /** The SQL expression (for `text` as stored: the compiler lower-cases it, as its index does). */
  readonly sql: string;
  readonly kind: AttributeKind;
}

/** A multi-valued attribute (`members`, `emails`): its sub-attributes, and how a condition on one of its values is asked. */
export interface MultiValued {
  readonly attributes: Readonly<Record<string, Attribute>>;
  /** Wraps a condition on the sub-attributes into one on the resource (`EXISTS (…)`, or the condition itself for a single value). */
  readonly some: (condition: string) => string;
}

export interface FilterSchema {
  /** The schema URNs whose attributes these are (`urn:…:core:2.0:user`), lower-cased. */
  readonly urns: readonly string[];
  /** By lower-cased path: `username`, `meta.lastmodified`. */
  readonly attributes: Readonly<Record<string, Attribute>>;
  readonly multiValued: Readonly<Record<string, MultiValued>>;
}

/** Binds values to `$n` placeholders, numbered after any the query already has. */
export class Parameters {
  readonly values: unknown[] = [];

  constructor(private readonly offset = 0) {}

  bind(value: unknown): string {
    this.values.push(value);
    return `$${this.offset + this.values.length}`;
  }
}

function unknownAttribute(path: AttrPath, schema: FilterSchema): Error {
  const names = [...Object.keys(schema.attributes), ...Object.keys(schema.multiValued).map((name) => `${name}.value`)];
  return scimProblem(
    'invalidFilter',
    `${pathText(path)} cannot be filtered on (filterable: ${[...new Set(names)].join(', ')}; names are case-insensitive)`,
    'filter',
  );
}

function pathText(path: AttrPath): string {
  return path.sub === undefined ? path.attr : `${path.attr}.${path.sub}`;
}

function checkUrn(path: AttrPath, schema: FilterSchema): void {
  if (path.urn !== undefined && !schema.urns.includes(path.urn))
    throw scimProblem('invalidFilter', `The schema ${path.urn} has no filterable attributes here`, 'filter');
}

const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (char) => `\\${char}`);

const LIKE: Partial<Record<CompareOp, (value: string) => string>> = {
  co: (value) => `%${escapeLike(value)}%`,
  sw: (value) => `${escapeLike(value)}%`,
  ew: (value) => `%${escapeLike(value)}`,
};
const ORDER: Partial<Record<CompareOp, string>> = { gt: '>', ge: '>=', lt: '<', le: '<=' };

function wrongValue(name: string, expected: string): Error {
  return scimProblem('invalidFilter', `${name} is compared with ${expected}`, 'filter');
}

function compare(name: string, attribute: Attribute, op: CompareOp, value: FilterValue, params: Parameters): string {
  const { sql, kind } = attribute;
  if (value === null) {
    if (op === 'eq') return `${sql} IS NULL`;
    if (op === 'ne') return `${sql} IS NOT NULL`;
    throw wrongValue(name, `a value, not null, by "${op}"`);
  }
  if (kind === 'boolean') {
    // Entra ID sends booleans as the strings "True" and "False".
    const flag = typeof value === 'string' ? { true: true, false: false }[value.toLowerCase()] : value;
    if (typeof flag !== 'boolean') throw wrongValue(name, 'true or false');
    if (op === 'eq') return `${sql} = ${params.bind(flag)}`;
    if (op === 'ne') return `${sql} IS DISTINCT FROM ${params.bind(flag)}`;
    throw wrongValue(name, '"eq" or "ne" only');
  }
  if (kind === 'timestamp') {
    const year = typeof value === 'string' ? new Date(value).getUTCFullYear() : Number.NaN;
    // Years PostgreSQL and ISO-8601 both hold; Date.parse also takes year 0, negatives and +275760.
    if (typeof value !== 'string' || !(year >= 1 && year <= 9999) || LIKE[op] !== undefined)
      throw wrongValue(name, 'an ISO-8601 date-time of the years 1–9999, by eq, ne, gt, ge, lt or le');
    const bound = `${params.bind(new Date(value).toISOString())}::timestamptz`;
    return op === 'eq'
      ? `${sql} = ${bound}`
      : op === 'ne'
        ? `${sql} IS DISTINCT FROM ${bound}`
        : `${sql} ${ORDER[op] ?? '='} ${bound}`;
  }
  if (kind === 'id') {
    const text = typeof value === 'number' ? String(value) : value;
    if (typeof text !== 'string') throw wrongValue(name, 'a string id');
    const like = LIKE[op];
    if (like !== undefined) return `${sql}::text LIKE ${params.bind(like(text))}`;
    // An id that is no number names no resource: eq finds none, ne finds all.
    if (!/^[1-9]\d{0,17}$/.test(text)) {
      if (op === 'eq') return 'false';
      if (op === 'ne') return 'true';
      throw wrongValue(name, 'a numeric id by gt, ge, lt or le');
    }
    const bound = `${params.bind(text)}::bigint`;
    return op === 'eq'
      ? `${sql} = ${bound}`
      : op === 'ne'
        ? `${sql} IS DISTINCT FROM ${bound}`
        : `${sql} ${ORDER[op] ?? '='} ${bound}`;
  }
  if (typeof value !== 'string') throw wrongValue(name, 'a string');
  const like = LIKE[op];
  // Case-insensitive text: lower() = lower() on its lower() index, ILIKE on its trigram index.
  if (like !== undefined) return `${sql} ${kind === 'text' ? 'ILIKE' : 'LIKE'} ${params.bind(like(value))}`;
  const [column, bound] =
    kind === 'text' ? [`lower(${sql})`, `lower(${params.bind(value)})`] : [sql, params.bind(value)];
  if (op === 'eq') return `${column} = ${bound}`;
  if (op === 'ne') return `${column} IS DISTINCT FROM ${bound}`;
  return `${column} ${ORDER[op] ?? '='} ${bound} COLLATE "C"`;
}

function present(attribute: Attribute): string {
  return attribute.kind === 'text' || attribute.kind === 'exact'
    ? `(${attribute.sql} IS NOT NULL AND ${attribute.sql} <> '')`
    : `${attribute.sql} IS NOT NULL`;
}

type Scope = Readonly<Record<string, Attribute>>;

/** The registry's own entry under a name the client chose: never one of Object.prototype's (`constructor`). */
function own<T>(record: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(record, name) ? record[name] : undefined;
}

function condition(filter: Filter, schema: FilterSchema, scope: Scope | undefined, params: Parameters): string {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return `(${filter.terms.map((term) => condition(term, schema, scope, params)).join(` ${filter.kind.toUpperCase()} `)})`;
    case 'not':
      return `NOT coalesce(${condition(filter.filter, schema, scope, params)}, false)`;
    case 'valuePath': {
      checkUrn(filter.path, schema);
      const multi = own(schema.multiValued, filter.path.attr);
      if (multi === undefined || scope !== undefined) throw unknownAttribute(filter.path, schema);
      const inner = condition(filter.filter, schema, multi.attributes, params);
      const then = filter.then === undefined ? '' : ` AND ${condition(filter.then, schema, multi.attributes, params)}`;
      return multi.some(`${inner}${then}`);
    }
    case 'present':
    case 'compare': {
      const { path } = filter;
      const [attribute, wrap] = resolve(path, schema, scope);
      const name = pathText(path);
      const sql =
        filter.kind === 'present' ? present(attribute) : compare(name, attribute, filter.op, filter.value, params);
      return wrap(sql);
    }
  }
}

/** The attribute a path names: in a value filter's scope, else the resource's own or a multi-valued one's sub-attribute. */
function resolve(path: AttrPath, schema: FilterSchema, scope: Scope | undefined): [Attribute, (sql: string) => string] {
  checkUrn(path, schema);
  const same = (sql: string): string => sql;
  if (scope !== undefined) {
    const attribute = path.sub === undefined ? own(scope, path.attr) : undefined;
    if (attribute === undefined) throw unknownAttribute(path, schema);
    return [attribute, same];
  }
  const attribute = own(schema.attributes, pathText(path));
  if (attribute !== undefined) return [attribute, same];
  // `members.value eq "12"`, and `emails eq "…"` (a multi-valued attribute compared by its value).
  const multi = own(schema.multiValued, path.attr);
  const sub = multi === undefined ? undefined : own(multi.attributes, path.sub ?? 'value');
  if (multi === undefined || sub === undefined) throw unknownAttribute(path, schema);
  return [sub, multi.some];
}

/** The filter as a SQL condition over the schema's expressions, its values bound to `params`. */
export function filterSql(filter: Filter, schema: FilterSchema, params: Parameters): string {
  return condition(filter, schema, undefined, params);
}

/** The attributes identity providers look resources up by before writing them. */
const LOOKUP_KEYS = new Set(['id', 'externalid', 'username', 'displayname']);

/** `attr eq value` on one of `LOOKUP_KEYS` (no sub-attribute). */
function isKeyLookup(filter: Filter): boolean {
  return (
    filter.kind === 'compare' &&
    filter.op === 'eq' &&
    filter.path.sub === undefined &&
    LOOKUP_KEYS.has(filter.path.attr)
  );
}

/** What a list reads: the live rows of `table` matching the filter, a page of them ordered by id, and the total. */
export interface PageSpec {
  readonly table: 'users' | 'groups';
  readonly schema: FilterSchema;
  /** The select list. */
  readonly columns: string;
}

/**
 * One statement for the page and its total (a lookup by userName is one index probe); a page past
 * the end has no row to carry the total, and asks for it alone.
 */
export async function scimPage<Row>(
  db: EntityManager,
  spec: PageSpec,
  filter: Filter | undefined,
  offset: number,
  count: number,
): Promise<{ total: number; rows: Row[] }> {
  const params = new Parameters();
  const where = `NOT is_deleted AND (${filter === undefined ? 'true' : filterSql(filter, spec.schema, params)})`;
  // Ordered by the row's id as a number (the select list's `id` is its text).
  const text = `SELECT ${spec.columns}, count(*) OVER ()::int AS total FROM ${spec.table}
      WHERE ${where} ORDER BY ${spec.table}.id LIMIT $${params.values.length + 1}${offset > 0 ? ` OFFSET $${params.values.length + 2}` : ''}`;
  const values = [...params.values, Math.max(count, 1), ...(offset > 0 ? [offset] : [])];
  // An identity provider's lookups (`eq` on a key, the first page, before each create) are
  // prepared once per connection: parsing and planning were most of their database time, and
  // PostgreSQL takes their generic plan after five runs (not with an `OFFSET` parameter, whose
  // generic cost looks higher). Only those: a prepared statement stays on its connection, and a
  // review counted 48 texts (about 5 MB of plans a connection) when every compared filter was.
  const rows =
    offset === 0 && (filter === undefined || isKeyLookup(filter))
      ? await preparedQuery<Row & { total: number }>(db, `scim-${spec.table}`, text, values, 'auto')
      : await db.query<(Row & { total: number })[]>(text, values);
  let total = rows[0]?.total;
  if (total === undefined && offset > 0) {
    const [counted] = await db.query<{ total: number }[]>(
      `SELECT count(*)::int AS total FROM ${spec.table} WHERE ${where}`,
      params.values,
    );
    total = counted?.total;
  }
  return { total: total ?? 0, rows: count === 0 ? [] : rows.map(({ total: _total, ...row }) => row as Row) };
}
