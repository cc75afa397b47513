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
const CLUSTER_SPECS = ['cache', 'list-cache', 'table-generations', 'cache-rebuild', 'scale-out'].map(
  (name) => `<rootDir>/test/e2e/${name}.spec.ts`,
);

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

export default {
  projects: [
    {
      ...project,
      displayName: 'main',
      testMatch: ['<rootDir>/test/**/*.spec.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.mjs',
      globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
    },
    {
      ...project,
      displayName: 'redis-cluster',
      testMatch: CLUSTER_SPECS,
      globalSetup: '<rootDir>/test/support/cluster-setup.mjs',
      globalTeardown: '<rootDir>/test/support/cluster-teardown.mjs',
      // Read by test-env.ts: the apps of these specs use the cluster.
      globals: { ADMIN_API_REDIS_TARGET: 'cluster' },
    },
  ],
  // Two cores: two workers, each booting its own app against the shared test database.
  maxWorkers: 2,
  testTimeout: 30_000,
  verbose: false,
};
