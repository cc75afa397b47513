import { spawn } from 'node:child_process';

const ROOT = new URL('../../', import.meta.url).pathname;

// Specs that read, write, corrupt and drop cache entries: with a shared key space, one run's
// flush or generation bump would fail the other's assertions on raw Redis entries.
const SPECS = ['test/e2e/cache.spec.ts', 'test/e2e/table-generations.spec.ts'];

function jestRun(): Promise<{ code: number | null; output: string }> {
  // A run of its own: the global setup chooses its database and key prefix.
  // The e2e project only: the cluster project would start a Redis Cluster per run.
  const {
    ADMIN_API_TEST_CACHE_PREFIX: _prefix,
    ADMIN_API_TEST_DATABASE_URL: _database,
    ADMIN_API_TEST_REDIS_CLUSTER_URL: _cluster,
    ADMIN_API_TEST_TIER: _tier,
    ...env
  } = process.env;
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--experimental-vm-modules',
        'node_modules/jest/bin/jest.js',
        '--maxWorkers=1',
        ...SPECS,
        '--selectProjects',
        'e2e',
      ],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describe('test isolation: two test runs on one machine pass side by side', () => {
  it('runs the cache specs twice at once, each run with its own database and Redis key prefix', async () => {
    const [first, second] = await Promise.all([jestRun(), jestRun()]);
    for (const run of [first, second]) {
      // The inner failures' titles, so a red run says which test of which run failed.
      const failed = [...run.output.matchAll(/● (.+)/g)].map((match) => match[1]);
      expect({ code: run.code, summary: /Tests: .*/.exec(run.output)?.[0], failed }).toEqual({
        failed: [],
        code: 0,
        summary: expect.stringMatching(/^Tests: +\d+ passed, \d+ total$/) as unknown,
      });
    }
  }, 240_000);
});
