/** The test Redis database (global-setup.mjs flushes the same one). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';

/** Set by the global setup: the fresh, migrated database of this run. */
export function testDatabaseUrl(): string {
  const url = process.env.ADMIN_API_TEST_DATABASE_URL;
  if (url === undefined)
    throw new Error('ADMIN_API_TEST_DATABASE_URL is unset: run the specs through jest (global setup)');
  return url;
}

/** The HS256 secret every test app verifies with (unless a spec chooses JWKS mode). */
export const TEST_JWT_SECRET = 'test-secret-0123456789abcdef0123456789abcdef';
