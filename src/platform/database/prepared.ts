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
    name = `${what}-${createHash('sha1').update(text).digest('base64url')}`;
    names.set(key, name);
  }
  return name;
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
 * `preparedQuery` for a read about `size` rows (ids asked): prepared up to `PREPARED_UP_TO`, planned
 * for its own parameters beyond. A generic plan is made without the parameters' values: good for
 * the few ids of a request, it ran past the statement timeout for a snapshot of 100 000 members
 * whose planning is a small part of the read anyway.
 */
export function sizedQuery<T>(
  db: EntityManager,
  what: string,
  text: string,
  values: readonly unknown[],
  size: number,
): Promise<T[]> {
  return size <= PREPARED_UP_TO ? preparedQuery<T>(db, what, text, values) : db.query<T[]>(text, [...values]);
}

/** Ids asked up to which a read is prepared (see `sizedQuery`). */
export const PREPARED_UP_TO = 100;
