/**
 * The unit tier (`npm run test:unit`): pure rules and concurrency objects, no PostgreSQL, no Redis,
 * no global setup. Races are proven with deterministic gates in fakes, never with sleeps.
 */
import { project } from './jest.config.js';

export default {
  ...project,
  displayName: 'unit',
  testMatch: ['<rootDir>/test/unit/**/*.spec.ts'],
  maxWorkers: 2,
  testTimeout: 10_000,
};
