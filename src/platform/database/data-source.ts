import pg from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../../migrations/index.js';
import type { Settings } from '../config/settings.js';
import { connectionName } from './embedded-postgres.js';

// Ids are bigint identities that the contract surfaces as JSON numbers; they stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

/** How long a pooled connection may sit idle before it is closed. */
const IDLE_CONNECTION_MS = 300_000;

/** The one data-source configuration used by the server, the CLI and the migration runner. */
export function dataSourceOptions(
  settings: Settings,
  url: string,
  applicationName = settings.dbApplicationName,
): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    // No entities: every statement is SQL in a repository (ARCHITECTURE.md, measured traps).
    entities: [],
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    extra: {
      max: settings.dbPoolSize,
      // Fail fast instead of queueing forever when PostgreSQL is unreachable: the request becomes a 503.
      connectionTimeoutMillis: settings.dbConnectTimeoutMs,
      statement_timeout: settings.dbStatementTimeoutMs,
      idle_in_transaction_session_timeout: settings.dbStatementTimeoutMs * 2,
      application_name: connectionName(settings, applicationName),
      // No JIT: it compiles any plan estimated above jit_above_cost, measured at 20-30 ms spent
      // compiling an access question that runs in 5 ms (an API's statements are short).
      // Synchronous commit, whatever the server's default: a read replica is trusted once it has
      // replayed the primary's flushed WAL, which holds every commit that returned (read-replicas.ts).
      options: '-c jit=off -c synchronous_commit=on',
      keepAlive: true,
      // A connection kept while idle for minutes, not pg-pool's 10 s: a new one costs its backend's
      // cold catalog caches and every prepared statement planned again. Adding a member to a group
      // covering 1 000 devices, 12 s apart: 140-190 ms a write with the 10 s default, 80-120 ms
      // with the connections kept.
      idleTimeoutMillis: IDLE_CONNECTION_MS,
    },
  };
}

export function createDataSource(settings: Settings, url: string, applicationName?: string): DataSource {
  return new DataSource(dataSourceOptions(settings, url, applicationName));
}

// Arbitrary constant: every instance takes this advisory lock so concurrent start-ups migrate one at a time.
const MIGRATION_LOCK = 7_314_402_118;

/** Applies pending migrations under an advisory lock; returns the names applied. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((migration) => migration.name);
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await runner.release();
  }
}
