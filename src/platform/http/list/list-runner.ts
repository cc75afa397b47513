import type { EntityManager } from 'typeorm';
import { ListResponse } from '../responses.js';
import { buildPageSql, buildWhere, type Scope } from './list-sql.js';
import { EXACT_COUNT_LIMIT, type ListQuery, type ListSpec } from './list-spec.js';

interface PlanRow {
  'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }];
}

/**
 * Runs a list query: one page plus `meta.total`. The total is a capped exact count (cheap),
 * falling back to the planner's estimate past 10 000 matches unless `count=exact` or the spec
 * always counts exactly (part 2).
 */
export async function runList<T>(
  db: EntityManager,
  spec: ListSpec,
  query: ListQuery,
  scope?: Scope,
  knownTotal?: { readonly value: number; readonly exact: boolean },
): Promise<ListResponse<T>> {
  const where = buildWhere(spec, query, scope);
  const page = buildPageSql(spec, query, where);
  const [rows, total] = await Promise.all([
    db.query<T[]>(page.text, [...page.params]),
    knownTotal ?? countMatches(db, spec, query, where.text, where.params),
  ]);
  return new ListResponse(rows, query.page, query.page_size, total.value, total.exact);
}

/** What decides a list's total (not its page, order or size): its table, conditions and counting mode. */
export function totalKey(spec: ListSpec, query: ListQuery, scope?: Scope): string {
  const where = buildWhere(spec, query, scope);
  return JSON.stringify([spec.from, where.text, where.params, query.count]);
}

/**
 * When what a list shows next changes by the clock alone (`spec.changesAt`: the next expiry in
 * the whole table, whatever the filters), in epoch milliseconds; undefined when nothing will.
 */
export async function nextChangeOf(db: EntityManager, spec: ListSpec): Promise<number | undefined> {
  if (spec.changesAt === undefined) return undefined;
  const [row] = await db.query<{ at: Date | null }[]>(
    `SELECT min(${spec.changesAt}) AS at FROM ${spec.from} WHERE ${spec.changesAt} > now()`,
  );
  return row?.at == null ? undefined : row.at.getTime();
}

/** Filters of append-only lists (the database refuses UPDATE, DELETE and TRUNCATE) known to match more than the exact-count limit; bounded. */
const OVER_LIMIT = new Set<string>();
const OVER_LIMIT_MAX = 10_000;

async function countMatches(
  db: EntityManager,
  spec: ListSpec,
  query: ListQuery,
  where: string,
  params: readonly unknown[],
): Promise<{ value: number; exact: boolean }> {
  if (query.count === 'exact' || spec.exactCount === true) {
    const [row] = await db.query<{ n: number }[]>(`SELECT count(*) AS n FROM ${spec.from} ${where}`, [...params]);
    return { value: Number(row?.n ?? 0), exact: true };
  }
  const known = spec.appendOnly === true ? `${spec.from}|${where}|${JSON.stringify(params)}` : undefined;
  if (known === undefined || !OVER_LIMIT.has(known)) {
    const [capped] = await db.query<{ n: number }[]>(
      `SELECT count(*) AS n FROM (SELECT 1 FROM ${spec.from} ${where} LIMIT ${EXACT_COUNT_LIMIT + 1}) capped`,
      [...params],
    );
    const n = Number(capped?.n ?? 0);
    if (n <= EXACT_COUNT_LIMIT) return { value: n, exact: true };
    if (known !== undefined) {
      if (OVER_LIMIT.size >= OVER_LIMIT_MAX) OVER_LIMIT.clear();
      OVER_LIMIT.add(known);
    }
  }
  const [plan] = await db.query<PlanRow[]>(`EXPLAIN (FORMAT JSON) SELECT 1 FROM ${spec.from} ${where}`, [...params]);
  const estimate = Math.round(plan?.['QUERY PLAN'][0].Plan['Plan Rows'] ?? 0);
  // We know more than the limit match, whatever the planner thinks.
  return { value: Math.max(estimate, EXACT_COUNT_LIMIT + 1), exact: false };
}
