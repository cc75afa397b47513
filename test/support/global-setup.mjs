// Plain ESM (Jest loads global setup outside its module mapper): it uses the compiled dist/,
// which `npm test` builds first.
import pg from 'pg';
import { loadSettings } from '../../dist/src/platform/config/settings.js';
import { BASE_RECORD_COLUMNS_V1, SOFT_DELETE_COLUMNS_V1 } from '../../dist/migrations/record-columns-v1.js';
import { migrate } from '../../dist/src/platform/database/migrate.js';
import { testSchema } from './test-schema.mjs';

export const TEST_DATABASE_SERVER_URL =
  process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';

async function withClient(url, work) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates this run's database (admin_api_test_*) and migrates it once, and chooses this run's
 * Redis key prefix: runs share the Redis database and never each other's keys.
 */
export default async function globalSetup() {
  const run = `${Date.now()}_${process.pid}`;
  const name = `admin_api_test_${run}`;
  process.env.ADMIN_API_TEST_CACHE_PREFIX = `admin-api-test-${run}:`;
  await withClient(TEST_DATABASE_SERVER_URL, (admin) => admin.query(`CREATE DATABASE ${name}`));
  const url = new URL(TEST_DATABASE_SERVER_URL);
  url.pathname = `/${name}`;
  process.env.ADMIN_API_TEST_DATABASE_URL = url.toString();
  await migrate(loadSettings({ DATABASE_URL: url.toString() }), url.toString());
  await withClient(url.toString(), (db) => db.query(testSchema(BASE_RECORD_COLUMNS_V1, SOFT_DELETE_COLUMNS_V1)));
}
