import pg from 'pg';
import { loadSettings } from '../../src/platform/config/settings.js';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations/index.js';
import { dataSourceOptions, runMigrations } from '../../src/platform/database/data-source.js';
import { migrate } from '../../src/platform/database/migrate.js';
import { BASE_RECORD_COLUMNS_V1, SOFT_DELETE_COLUMNS_V1 } from '../../migrations/record-columns-v1.js';
import { testDatabaseUrl } from './test-env.js';
import { testSchema } from './test-schema.mjs';

async function onServer(work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const server = new URL(testDatabaseUrl());
  server.pathname = '/postgres';
  const client = new pg.Client({ connectionString: server.toString() });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

/**
 * A migrated database of the spec's own, for specs that write to arbitrary ids (the fuzzer)
 * and must not touch other specs' rows; dropped by `drop()`.
 */
export async function createOwnDatabase(
  tag: string,
  options: { migrateUpTo?: string; empty?: boolean; widgets?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `admin_api_test_${tag}_${Date.now()}_${process.pid}`;
  await onServer((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  const settings = loadSettings({ DATABASE_URL: url.toString() });
  if (options.empty === true) {
    // Left empty: the process under test applies the migrations itself.
  } else if (options.migrateUpTo === undefined) {
    await migrate(settings, url.toString());
  } else {
    // Only the migrations up to and including `migrateUpTo`: a data migration's test seeds the schema before it.
    const last = MIGRATIONS.findIndex((migration) => migration.name === options.migrateUpTo);
    if (last < 0) throw new Error(`no migration named ${options.migrateUpTo}`);
    const dataSource = new DataSource({
      ...dataSourceOptions(settings, url.toString()),
      migrations: MIGRATIONS.slice(0, last + 1),
    });
    await dataSource.initialize();
    await runMigrations(dataSource).finally(() => dataSource.destroy());
  }
  // The test-only widget routes' table, for specs that mount them on their own database.
  if (options.widgets === true) {
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    await client.query(testSchema(BASE_RECORD_COLUMNS_V1, SOFT_DELETE_COLUMNS_V1)).finally(() => client.end());
  }
  return {
    url: url.toString(),
    drop: () => onServer((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}
