/** Jest 30 in ESM mode (run through `node --experimental-vm-modules`), TypeScript compiled by SWC. */
const swc = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2023',
    keepClassNames: true,
  },
  module: { type: 'es6' },
  sourceMaps: 'inline',
};

// The cache specs run a second time against a Redis Cluster of the run's own (3 masters and 3
// replicas, started by the project's global setup): every script must keep to one hash slot.
const CLUSTER_SPECS = [
  'cache',
  'cache-wrong-type',
  'list-cache',
  'table-generations',
  'cache-rebuild',
  'scale-out',
].map((name) => `<rootDir>/test/e2e/${name}.spec.ts`);

export const project = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', swc],
    // @fastify/static (CommonJS) requires this ESM-only package; Jest's module runtime cannot require(esm).
    'node_modules/content-disposition/.+\\.js$': ['@swc/jest', { module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!content-disposition/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};

/**
 * The slow tier: specs that start clusters, replicas, a browser, a replayed image, whole copies of
 * the project or the fuzzer. `npm test` runs them with the rest; `npm run test:e2e` leaves them out
 * (the contract alone) and `npm run test:slow` runs only them.
 */
export const SLOW_SPECS = [
  'e2e/redis-cluster-failover',
  'e2e/read-replicas',
  'e2e/scale-out',
  'e2e/swagger-ui',
  'e2e/docker-image',
  'e2e/schematic',
  'e2e/parallel-runs',
  'e2e/embedded-start',
  'fuzz/contract.fuzz',
].map((name) => `<rootDir>/test/${name}.spec.ts`);

// ADMIN_API_TEST_TIER: unset (everything), `contract` (unit and e2e without the slow tier) or `slow`.
const tier = process.env.ADMIN_API_TEST_TIER ?? 'all';
const e2e = {
  ...project,
  displayName: 'e2e',
  testMatch: tier === 'slow' ? SLOW_SPECS : ['<rootDir>/test/e2e/**/*.spec.ts', '<rootDir>/test/fuzz/**/*.spec.ts'],
  testPathIgnorePatterns: tier === 'contract' ? SLOW_SPECS.map((spec) => spec.replace('<rootDir>/', '/')) : [],
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
};
// The unit tier needs no database and no Redis: no global setup (jest.unit.config.js runs it alone).
const unit = { ...project, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] };
const cluster = {
  ...project,
  displayName: 'redis-cluster',
  testMatch: CLUSTER_SPECS,
  globalSetup: '<rootDir>/test/support/cluster-setup.mjs',
  globalTeardown: '<rootDir>/test/support/cluster-teardown.mjs',
  // Read by test-env.ts: the apps of these specs use the cluster.
  globals: { ADMIN_API_REDIS_TARGET: 'cluster' },
};

export default {
  projects: tier === 'contract' ? [unit, e2e] : tier === 'slow' ? [e2e, cluster] : [unit, e2e, cluster],
  // Two cores: two workers, each booting its own app against the shared test database.
  maxWorkers: 2,
  testTimeout: 30_000,
  verbose: false,
};
