/** Set by the `redis-cluster` Jest project (jest.config.js) for the specs it runs again on a cluster. */
const ON_CLUSTER = (globalThis as { ADMIN_API_REDIS_TARGET?: string }).ADMIN_API_REDIS_TARGET === 'cluster';

/**
 * The test Redis database (runs share it; each keeps to its own key prefix), or in the
 * `redis-cluster` project the run's own cluster (`redis+cluster://…`).
 */
export const TEST_REDIS_URL = ON_CLUSTER ? clusterUrl() : (process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15');

function clusterUrl(): string {
  const url = process.env.ADMIN_API_TEST_REDIS_CLUSTER_URL;
  if (url === undefined) throw new Error('ADMIN_API_TEST_REDIS_CLUSTER_URL is unset: the cluster project starts it');
  return url;
}

/**
 * This run's key prefix (set by the global setup, removed with its keys by the teardown), so two
 * `npm test` on one machine never see each other's entries. A spec that drops or corrupts the
 * whole cache takes a prefix of its own below it (`testCachePrefix('faults')`).
 */
export function testCachePrefix(spec?: string): string {
  const prefix = process.env.ADMIN_API_TEST_CACHE_PREFIX;
  if (prefix === undefined) throw new Error('ADMIN_API_TEST_CACHE_PREFIX is unset: run the specs through jest');
  return spec === undefined ? prefix : `${prefix}${spec}:`;
}

/** Set by the global setup: the fresh, migrated database of this run. */
export function testDatabaseUrl(): string {
  const url = process.env.ADMIN_API_TEST_DATABASE_URL;
  if (url === undefined)
    throw new Error('ADMIN_API_TEST_DATABASE_URL is unset: run the specs through jest (global setup)');
  return url;
}

/** The HS256 secret every test app verifies with (unless a spec chooses JWKS mode). */
export const TEST_JWT_SECRET = 'test-secret-0123456789abcdef0123456789abcdef';
