import type { EntityManager } from 'typeorm';
import { TRIGGER_WRITTEN_TABLES } from '../../migrations/index.js';
import type { TransactionInspector } from '../../src/platform/database/unit-of-work.js';

type Counts = ReadonlyMap<string, number>;

/**
 * Rows inserted, updated or deleted per table of ours (not the job queue's schema) by this backend
 * and not yet flushed to the shared statistics. That includes earlier transactions of the same
 * pooled connection, but nothing is flushed inside a transaction, so the difference between its
 * start and its end is its own writes.
 */
async function writeCounts(db: EntityManager): Promise<Counts> {
  const rows = await db.query<{ relname: string; n: string }[]>(
    'SELECT relname, n_tup_ins + n_tup_upd + n_tup_del AS n FROM pg_stat_xact_user_tables WHERE schemaname = current_schema()',
  );
  return new Map(rows.map((row) => [row.relname, Number(row.n)]));
}

/** Written by the database's own triggers, declared by the migrations that create them. */
const TRIGGER_BOOKKEEPING = new Set(TRIGGER_WRITTEN_TABLES);

/**
 * The suite's look into every transaction of an app it starts: the tables it wrote, by
 * PostgreSQL's count, against those its repositories declared through `tx.write()`. A forgotten
 * declaration (a list page that would stay stale) fails the write, so the spec that made it fails.
 */
export class DeclaredWrites implements TransactionInspector<Counts> {
  begin(db: EntityManager): Promise<Counts> {
    return writeCounts(db);
  }

  async end(db: EntityManager, before: Counts, declared: ReadonlySet<string>): Promise<void> {
    const after = await writeCounts(db);
    const missing = [...after]
      .filter(([table, n]) => n > (before.get(table) ?? 0) && !declared.has(table) && !TRIGGER_BOOKKEEPING.has(table))
      .map(([table]) => table);
    if (missing.length > 0) throw new Error(`tables written outside tx.write(): ${missing.join(', ')}`);
  }
}
