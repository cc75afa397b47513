import pg from 'pg';
import { loadSettings } from '../../src/config/settings.js';
import { migrate } from '../../src/database/migrate.js';
import { testDatabaseUrl } from './test-env.js';

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
export async function createOwnDatabase(tag: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `admin_api_test_${tag}_${Date.now()}_${process.pid}`;
  await onServer((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  await migrate(loadSettings({ DATABASE_URL: url.toString() }), url.toString());
  return { url: url.toString(), drop: () => onServer((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)) };
}
