import { createHash } from 'node:crypto';
import type { PoolClient } from 'pg';
import type { EntityManager } from 'typeorm';

/** Statement names by text: the texts are built once per process, hashing each call would repeat it. */
const names = new Map<string, string>();

/** A prepared statement's name on its connection: what it reads, and a digest of its text. */
export function preparedName(what: string, text: string): string {
  const key = `${what}\n${text}`;
  let name = names.get(key);
  if (name === undefined) {
    name = digestName(what, text);
    names.set(key, name);
  }
  return name;
}

function digestName(what: string, text: string): string {
  return `${what}-${createHash('sha1').update(text).digest('base64url')}`;
}

/** A write run as a named prepared statement on its transaction's connection (`tx.write`). */
export interface PreparedText {
  readonly name: string;
  readonly text: string;
}

/** What `tx.write` runs: a text PostgreSQL plans at each run, or a prepared one. */
export type Statement = string | PreparedText;

/** Prepared texts of one kind (`what`) a connection keeps at most; its further texts run unprepared. */
export const PREPARED_WRITES_PER_KIND = 6;
const writes = new Map<string, Statement>();
const writeKinds = new Map<string, number>();

/**
 * `text` as a prepared write for `tx.write`: parsed once per connection and, after PostgreSQL's
 * five custom plans, run on its generic plan. For the writes of every request whose planning cost
 * more than running them (a user's insert returns its effective role through its groups: 0.9 of
 * 1.9 ms was planning). Only for statements whose best plan does not depend on their parameters'
 * values (one row by id, an `unnest` of arrays): a generic plan is made without them. Each
 * prepared text costs a connection memory (about 200 KB for a user's write), so a kind whose
 * texts vary with what a request sets (a PATCH's columns) keeps only its first few.
 */
export function preparedWrite(what: string, text: string): Statement {
  const key = `${what}\n${text}`;
  let statement = writes.get(key);
  if (statement === undefined) {
    const kept = writeKinds.get(what) ?? 0;
    statement = kept < PREPARED_WRITES_PER_KIND ? { name: digestName(what, text), text } : text;
    writeKinds.set(what, kept + 1);
    writes.set(key, statement);
  }
  return statement;
}

/** The statement's text (for a runner with no prepared statements: the CLI's). */
export function textOf(statement: Statement): string {
  return typeof statement === 'string' ? statement : statement.text;
}

/**
 * Runs a prepared write on the transaction's connection, answering as TypeORM's `query` would
 * (`[rows, count]` for an update or a delete, the rows otherwise), so callers read both alike.
 */
export async function runPreparedWrite<T>(
  db: EntityManager,
  statement: PreparedText,
  values: readonly unknown[],
): Promise<T> {
  if (db.queryRunner === undefined) throw new Error(`prepared write ${statement.name} outside a transaction`);
  const client = (await db.queryRunner.connect()) as PoolClient;
  const result = await client.query({ name: statement.name, text: statement.text, values: [...values] });
  return (
    result.command === 'UPDATE' || result.command === 'DELETE' ? [result.rows, result.rowCount] : result.rows
  ) as T;
}

/**
 * Runs a read as a named prepared statement with its generic plan: PostgreSQL plans it once per
 * connection. For the large reads made on every write or cache miss
 * whose planning cost more than running them (an auth context's facts: 3.4 of 4.1 ms; a watch's
 * snapshot of the members' chains: 1.1 of 1.2 ms). Inside a transaction (a `Tx`'s `db`) it runs on
 * the transaction's connection; otherwise on a pooled connection taken for it.
 */
export async function preparedQuery<T>(
  db: EntityManager,
  what: string,
  text: string,
  values: readonly unknown[],
  plan: 'generic' | 'auto' = 'generic',
): Promise<T[]> {
  const own = db.queryRunner === undefined;
  const runner = db.queryRunner ?? db.connection.createQueryRunner();
  try {
    const client = (await runner.connect()) as PoolClient;
    // `auto`: PostgreSQL's own choice, for a statement whose generic plan it takes after its fifth
    // run (an index probe), with no round trips to set it.
    if (plan === 'auto')
      return (await client.query<T & object>({ name: preparedName(what, text), text, values: [...values] })).rows;
    // Left to itself (`auto`), PostgreSQL plans these anew at each run: their generic plan looks
    // costlier to it than the custom ones it tried first. The setting holds for this statement
    // only: the connection's other statements, a transaction's included, keep theirs.
    await client.query('SET plan_cache_mode = force_generic_plan');
    try {
      return (await client.query<T & object>({ name: preparedName(what, text), text, values: [...values] })).rows;
    } finally {
      // In a transaction that this statement aborted, the rollback undoes the SET itself.
      await client.query('RESET plan_cache_mode').catch(() => undefined);
    }
  } finally {
    if (own) await runner.release();
  }
}

/**
 * A read about some ids, its text made by `text` from the ids' SQL array (the first value):
 * prepared up to `PREPARED_UP_TO` ids, planned for its own parameters beyond. A generic plan is
 * made without the parameters' values: good for the few ids of a request, it ran past the
 * statement timeout for a snapshot of 100 000 members whose planning is a small part of the read
 * anyway. One id (a write's watch, an auth context's rebuild: most calls) is `ARRAY[$1::bigint]`:
 * its generic plan then knows the array's length, costs what a custom plan does, and PostgreSQL
 * takes it by itself after five runs (`auto`), with no SET and RESET around it. With a bigint[]
 * parameter it planned anew at each run (1.3 ms instead of 0.26 ms with 100 000 users).
 */
export function sizedQuery<T>(
  db: EntityManager,
  what: string,
  text: (ids: string) => string,
  ids: readonly number[],
  values: readonly unknown[] = [],
): Promise<T[]> {
  const [one, ...more] = ids;
  if (one !== undefined && more.length === 0)
    return preparedQuery<T>(db, `${what}-1`, text('ARRAY[$1::bigint]'), [one, ...values], 'auto');
  const many = text('$1::bigint[]');
  return ids.length <= PREPARED_UP_TO
    ? preparedQuery<T>(db, what, many, [[...ids], ...values])
    : db.query<T[]>(many, [[...ids], ...values]);
}

/** Ids asked up to which a read is prepared (see `sizedQuery`). */
export const PREPARED_UP_TO = 100;
