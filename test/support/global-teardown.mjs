import pg from 'pg';
import { TEST_DATABASE_SERVER_URL } from './global-setup.mjs';

/** Drops the database this run created, and only that one. */
export default async function globalTeardown() {
  const url = process.env.ADMIN_API_TEST_DATABASE_URL;
  if (url === undefined || process.env.KEEP_TEST_DATABASE === '1') return;
  const name = new URL(url).pathname.slice(1);
  if (!name.startsWith('admin_api_test_')) return;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_SERVER_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
