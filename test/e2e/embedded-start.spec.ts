import { existsSync, mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../../migrations/index.js';
import { runCli } from '../support/cli.js';
import { startServer, waitReady } from '../support/server-process.js';
import { freePort } from '../support/redis-server.js';

describe('npm start with no settings (embedded PostgreSQL, in-process cache)', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'admin-api-embedded-'));
    // As root the embedded server runs as the postgres OS user, which must reach the directory.
    chmodSync(dataDir, 0o755);
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

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
    expect(seeded.stderr).toMatch(/done in [\d.]+ s: 10000 users, 5000 devices/);

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

    // The CLI shares the running server's embedded PostgreSQL (and leaves it running).
    const again = await runCli(['bootstrap-admin', '--email', 'a@example.com'], env);
    expect(again.stderr).toContain('reusing super_admin user');
    expect(
      (
        await fetch(`http://127.0.0.1:${port}/v1/admin/users`, {
          headers: { authorization: `Bearer ${again.stdout.trim()}` },
        })
      ).status,
    ).toBe(200);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  }, 120_000);

  it('refuses a bad setting with one line naming it', async () => {
    const server = startServer({ PORT: 'eighty', DATA_DIR: dataDir });
    expect(await server.exited).toBe(1);
    expect(server.output()).toBe('Invalid setting PORT: "eighty" is not an integer\n');
  });
});
