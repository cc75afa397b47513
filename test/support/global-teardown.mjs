import { createClient } from '@keyv/redis';
import pg from 'pg';
import { TEST_DATABASE_SERVER_URL, TEST_REDIS_URL } from './global-setup.mjs';

/** Removes this run's Redis keys (its prefix), and only those. */
async function dropRunKeys() {
  const prefix = process.env.ADMIN_API_TEST_CACHE_PREFIX;
  if (prefix === undefined || !prefix.startsWith('admin-api-test-')) return;
  const redis = createClient({ url: TEST_REDIS_URL });
  await redis.connect();
  try {
    for await (const keys of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      if (keys.length > 0) await redis.unlink(keys);
    }
  } finally {
    await redis.close();
  }
}

/** Drops the database and the Redis keys this run created, and only those. */
export default async function globalTeardown() {
  await dropRunKeys();
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
