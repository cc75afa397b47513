import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { MIGRATIONS } from '../../migrations/index.js';
import { runCli } from '../support/cli.js';
import { startServer, waitReady } from '../support/server-process.js';
import { freePort } from '../support/redis-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Stops a PostgreSQL a failing case left running on `dataDir`, so that the directory can go. */
async function stopLeftover(dataDir: string): Promise<void> {
  const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  try {
    process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGINT');
  } catch {
    return;
  }
  for (let wait = 0; wait < 100 && existsSync(pidFile); wait += 1) await sleep(100);
}

describe('npm start with no settings (embedded PostgreSQL, in-process cache)', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'admin-api-embedded-'));
    // As root the embedded server runs as the postgres OS user, which must reach the directory.
    chmodSync(dataDir, 0o755);
  });
  afterAll(async () => {
    await stopLeftover(dataDir);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('bootstraps an admin, serves on an embedded PostgreSQL, stops it on SIGTERM, and reuses the data on restart', async () => {
    const port = await freePort();
    const env = { PORT: String(port), DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(await freePort()) };

    // The README's "get a token" step on a fresh clone: the CLI runs first, starts the embedded
    // PostgreSQL, applies the migrations and stops it again.
    const bootstrap = await runCli(['bootstrap-admin', '--email', 'a@example.com'], env);
    expect(bootstrap.stderr).toContain('initialising embedded PostgreSQL');
    expect(bootstrap.stderr).toContain(`applied ${MIGRATIONS.length} migration(s)`);
    expect(bootstrap.code).toBe(0);
    expect(existsSync(join(dataDir, 'jwt-secret'))).toBe(true);
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);

    const first = startServer(env);
    const ready = await waitReady(port, first);
    expect(ready.status).toBe(200);
    expect(ready.body.data).toMatchObject({ database: 'up', cache: 'memory' });
    expect(first.output()).toContain('database schema is up to date');
    // Not a terminal: JSON lines; one ready line with the URL, the docs URL and both modes; no route table.
    const lines = first
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((line) => typeof line.docs === 'string')).toEqual([
      expect.objectContaining({
        url: `http://127.0.0.1:${port}`,
        docs: `http://127.0.0.1:${port}/docs`,
        database: 'embedded',
        cache: 'memory',
        msg: `admin-api ready on http://127.0.0.1:${port} · docs http://127.0.0.1:${port}/docs · database embedded · cache memory`,
      }),
    ]);
    expect(first.output()).not.toContain('Mapped {');
    const users = await fetch(`http://127.0.0.1:${port}/v1/admin/users`, {
      headers: { authorization: `Bearer ${bootstrap.stdout.trim()}` },
    });
    expect(users.status).toBe(200);
    expect(((await users.json()) as { data: { email: string }[] }).data.map((user) => user.email)).toEqual([
      'a@example.com',
    ]);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('stopping embedded PostgreSQL');
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);

    // Demo data on the embedded default, with its progress bar; every list then pages through it.
    const seeded = await runCli(['seed-demo', '--users', '10000'], env);
    expect(seeded.code).toBe(0);
    expect(seeded.stderr).toContain('] 100% 10000/10000 users');
    expect(seeded.stderr).toMatch(
      /done in [\d.]+ s:\n {2}users +10000 added, +0 already there\n {2}devices +5000 added/,
    );

    const second = startServer(env);
    expect((await waitReady(port, second)).status).toBe(200);
    expect(second.output()).not.toContain('initialising embedded PostgreSQL');

    const auth = { authorization: `Bearer ${bootstrap.stdout.trim()}` };
    for (const list of [
      'users',
      'devices',
      'authorities',
      'permissions',
      'roles',
      'permission-grants',
      'authority-permissions',
      'inbox',
      'message-read-state',
      'mobile-devices',
    ]) {
      const page = await fetch(`http://127.0.0.1:${port}/v1/admin/${list}?page=2&page_size=2`, { headers: auth });
      const body = (await page.json()) as { data: unknown[] };
      expect({ list, status: page.status, rows: body.data.length }).toEqual({ list, status: 200, rows: 2 });
    }
    const history = (await (
      await fetch(`http://127.0.0.1:${port}/v1/admin/devices/1/ownership-transfers`, { headers: auth })
    ).json()) as { data: { from_user_id: number | null }[] };
    expect(history.data).toEqual([expect.objectContaining({ from_user_id: null })]);

    // The CLI shares the running server's embedded PostgreSQL and leaves it running, silently:
    // the server's connections are another process's, the CLI's own do not count.
    const again = await runCli(['bootstrap-admin', '--email', 'a@example.com'], env);
    expect(again.stderr).toContain('reusing super_admin user');
    const migrated = await runCli(['migrate'], env);
    expect(
      (
        await fetch(`http://127.0.0.1:${port}/v1/admin/users`, {
          headers: { authorization: `Bearer ${again.stdout.trim()}` },
        })
      ).status,
    ).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    // Checked once the server is down, so that a failure here leaves no server running.
    expect(again.stderr).toMatch(/^reusing super_admin user \d+ \(a@example\.com\); session [\w-]+ valid until \S+\n$/);
    expect(migrated).toEqual({ code: 0, stdout: '', stderr: 'database schema is up to date\n' });
  }, 120_000);

  it('a start that fails (the port is taken) exits 1 and stops the embedded PostgreSQL it started', async () => {
    const port = await freePort();
    const taken = createServer();
    await new Promise<void>((listening) => taken.listen(port, '127.0.0.1', listening));
    try {
      const server = startServer({
        PORT: String(port),
        DATA_DIR: dataDir,
        EMBEDDED_POSTGRES_PORT: String(await freePort()),
      });
      expect(await server.exited).toBe(1);
      expect(server.output()).toContain('starting embedded PostgreSQL');
      expect(server.output()).toContain('stopping embedded PostgreSQL');
      expect(server.output()).not.toContain('left running');
      expect(server.output()).toMatch(/admin-api failed to start: listen EADDRINUSE.*\n$/);
      expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    } finally {
      await new Promise((closed) => taken.close(closed));
    }
  }, 60_000);

  it('a second checkout: a new data directory whose default port is taken keeps a free one of its own and starts', async () => {
    // Hold 54329 as another checkout's embedded PostgreSQL would (it may already be held). Whoever
    // connects (another process on the machine looking for its PostgreSQL) is hung up on, so that
    // closing the holder never waits for a stranger's connection.
    const holder = createServer((socket) => socket.destroy());
    await new Promise<void>((settled) => {
      holder.once('error', () => settled());
      holder.listen(54329, '127.0.0.1', () => settled());
    });
    const second = mkdtempSync(join(tmpdir(), 'admin-api-second-'));
    chmodSync(second, 0o755);
    try {
      const env = { DATA_DIR: second };
      const first = await runCli(['bootstrap-admin', '--email', 'b@example.com'], env);
      expect(first.code).toBe(0);
      const kept = Number(readFileSync(join(second, 'postgres.port'), 'utf8'));
      expect(kept).not.toBe(54329);
      expect(first.stderr).toContain(`port 54329 is taken: this data directory's PostgreSQL uses ${kept}`);
      expect(first.stderr).toContain(`starting embedded PostgreSQL on 127.0.0.1:${kept}`);
      // The next run uses the port it kept.
      const again = await runCli(['issue-token', '--user-id', '1'], env);
      expect([again.code, again.stderr]).toEqual([0, expect.stringContaining(`127.0.0.1:${kept}`)]);
      // A kept port another process took since: one line that says so and names the setting.
      const taken = createServer((socket) => socket.destroy());
      await new Promise<void>((listening) => taken.listen(kept, '127.0.0.1', listening));
      try {
        const refused = await runCli(['issue-token', '--user-id', '1'], env);
        expect(refused.code).not.toBe(0);
        expect(refused.stderr).toMatch(
          new RegExp(
            `embedded PostgreSQL could not start: 127\\.0\\.0\\.1:${kept} is taken by another process .*set EMBEDDED_POSTGRES_PORT`,
          ),
        );
      } finally {
        await new Promise((closed) => taken.close(closed));
      }
    } finally {
      await new Promise((closed) => holder.close(closed));
      await stopLeftover(second);
      rmSync(second, { recursive: true, force: true });
    }
  }, 120_000);

  it('on a terminal format (LOG_FORMAT=pretty) prints readable lines, not JSON', async () => {
    const port = await freePort();
    const env = {
      PORT: String(port),
      DATA_DIR: dataDir,
      EMBEDDED_POSTGRES_PORT: String(await freePort()),
      LOG_FORMAT: 'pretty',
    };
    const server = startServer(env);
    expect((await waitReady(port, server)).status).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    // One line per event, fields included: the ready line is followed by the next event's line.
    const lines = server
      .output()
      .split('\n')
      .filter((line) => line !== '');
    const ready = lines.findIndex((line) => line.includes('admin-api ready on'));
    expect(lines[ready]).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: admin-api ready on http:\/\/127\.0\.0\.1:\d+ · docs .*\/docs · database embedded · cache memory$/,
    );
    expect(lines.slice(ready).every((line) => /^\[\d\d:\d\d:\d\d\.\d{3}\] [A-Z]+: /.test(line))).toBe(true);
    expect(lines.filter((line) => line.startsWith('{'))).toEqual([]);
  }, 60_000);

  // Only root hands the embedded server to the postgres OS user (CI runs as root).
  (process.getuid?.() === 0 ? it : it.skip)(
    'as root, stops with one line naming the directory the postgres OS user cannot enter',
    async () => {
      const closed = mkdtempSync(join(tmpdir(), 'admin-api-closed-'));
      try {
        chmodSync(closed, 0o700);
        const run = await runCli(['migrate'], {
          DATA_DIR: join(closed, 'data'),
          EMBEDDED_POSTGRES_PORT: String(await freePort()),
        });
        expect(run.code).toBe(1);
        expect(run.stderr.trim().split('\n')).toEqual([
          `error: embedded PostgreSQL runs as the OS user "postgres" (it refuses root), and that user cannot enter ${closed}: run \`chmod o+x ${closed}\`, or clone the project where others can enter, or run as a non-root user, or set DATABASE_URL`,
        ]);
      } finally {
        rmSync(closed, { recursive: true, force: true });
      }
    },
  );

  // The scripts check DATA_DIR before they build (a first build takes a minute or more).
  (process.getuid?.() === 0 ? it : it.skip)(
    'as root, npm start, npm run cli and the bin refuse a data directory the postgres OS user cannot enter before building',
    () => {
      // What the scripts need and no dist/: a build would start with "building dist/…" (and fail).
      const project = mkdtempSync(join(tmpdir(), 'admin-api-prebuild-'));
      const closed = mkdtempSync(join(tmpdir(), 'admin-api-closed-'));
      try {
        chmodSync(project, 0o755);
        chmodSync(closed, 0o700);
        const data = join(closed, 'data');
        mkdirSync(data, { mode: 0o755 });
        chmodSync(data, 0o755);
        for (const path of ['package.json', 'scripts', 'bin', 'src/platform/database/server-user.mjs'])
          cpSync(join(ROOT, path), join(project, path), { recursive: true });
        mkdirSync(join(project, 'migrations'));
        symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'));
        const env = Object.fromEntries(
          Object.entries(process.env).filter(([key]) => !['DATABASE_URL', 'REDIS_URL', 'JWT_SECRET'].includes(key)),
        );
        for (const [command, args] of [
          ['npm', ['start']],
          ['npm', ['run', 'cli', '--', 'migrate']],
          [join(project, 'bin', 'admin-api'), ['migrate']],
        ] as const) {
          const run = spawnSync(command, args, {
            cwd: project,
            env: { ...env, DATA_DIR: data },
            encoding: 'utf8',
            timeout: 60_000,
          });
          expect({
            command,
            args,
            status: run.status,
            built: `${run.stdout}${run.stderr}`.includes('building dist/'),
          }).toEqual({
            command,
            args,
            status: 1,
            built: false,
          });
          expect(run.stderr).toContain(
            `error: embedded PostgreSQL runs as the OS user "postgres" (it refuses root), and that user cannot enter ${closed}: run \`chmod o+x ${closed}\``,
          );
        }
      } finally {
        rmSync(project, { recursive: true, force: true });
        rmSync(closed, { recursive: true, force: true });
      }
    },
    120_000,
  );

  it('refuses a bad setting with one line naming it', async () => {
    const server = startServer({ PORT: 'eighty', DATA_DIR: dataDir });
    expect(await server.exited).toBe(1);
    expect(server.output()).toBe('Invalid setting PORT: "eighty" is not an integer\n');
  });
});
