import type { FilterSpec, ListQuery, ListSpec } from './list-spec.js';

/** A parameterised SQL fragment. */
export interface Sql {
  readonly text: string;
  readonly params: readonly unknown[];
}

/** Extra condition a caller adds, e.g. authorization row filtering; `$n` placeholders are numbered from 1. */
export interface Scope {
  readonly where: string;
  readonly params: readonly unknown[];
}

function renumber(text: string, offset: number): string {
  return text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
}

function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/**
 * Timestamps are shown to the millisecond while stored to the microsecond: "after X" means after
 * X's millisecond, so an event shown as X is never listed as after X.
 */
function comparison(filter: FilterSpec, n: number): string {
  if (filter.operator === '>' && filter.type === 'timestamp') return `>= $${n}::timestamptz + interval '1 millisecond'`;
  return `${filter.operator ?? '='} $${n}`;
}

/** The WHERE clause shared by the page query and the count. */
export function buildWhere(spec: ListSpec, query: ListQuery, scope?: Scope): Sql {
  const conditions: string[] = [];
  const params: unknown[] = [];
  if (spec.deletedColumn !== undefined && !query.include_deleted) conditions.push(`${spec.deletedColumn} = false`);
  for (const [name, value] of Object.entries(query.filters)) {
    const filter = spec.filters[name];
    if (filter === undefined) continue;
    params.push(value);
    conditions.push(`${filter.column} ${comparison(filter, params.length)}`);
  }
  if (query.q !== undefined && spec.search.length > 0) {
    params.push(`%${escapeLike(query.q)}%`);
    const placeholder = `$${params.length}`;
    conditions.push(`(${spec.search.map((column) => `${column} ILIKE ${placeholder}`).join(' OR ')})`);
  }
  if (scope !== undefined) {
    conditions.push(`(${renumber(scope.where, params.length)})`);
    params.push(...scope.params);
  }
  return { text: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, params };
}

/** ORDER BY from the requested sort, always ending with the id tie-break. */
export function buildOrderBy(spec: ListSpec, query: ListQuery): string {
  const terms = query.sort.map(
    ({ field, direction }) => `${spec.sort[field] ?? spec.idColumn} ${direction.toUpperCase()}`,
  );
  if (!query.sort.some(({ field }) => spec.sort[field] === spec.idColumn)) terms.push(`${spec.idColumn} ASC`);
  return `ORDER BY ${terms.join(', ')}`;
}

export function buildPageSql(spec: ListSpec, query: ListQuery, where: Sql): Sql {
  const params = [...where.params, query.page_size, (query.page - 1) * query.page_size];
  const n = where.params.length;
  return {
    text: `SELECT ${spec.select} FROM ${spec.from} ${where.text} ${buildOrderBy(spec, query)} LIMIT $${n + 1} OFFSET $${n + 2}`,
    params,
  };
}
