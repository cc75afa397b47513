import jwt from 'jsonwebtoken';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { actor, createUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { sql } from '../support/db.js';
import { TEST_JWT_SECRET, testDatabaseUrl } from '../support/test-env.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Runs `work` on every item, `limit` at a time, in order of the items. The CLI cases are
 * independent processes: three at once keep the spec's time down on a loaded machine without
 * starving the rest of the suite.
 */
async function eachLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += limit)
    results.push(...(await Promise.all(items.slice(start, start + limit).map(work))));
  return results;
}

/** A CLI process takes about a second on an idle machine and several on a loaded one. */
const PER_PROCESS_MS = 15_000;

describe('CLI token commands (part 11)', () => {
  let t: TestApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null });
    env = { DATABASE_URL: testDatabaseUrl(), JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'silent' };
  });
  afterAll(() => t.close());

  const works = async (token: string): Promise<void> => {
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', `Bearer ${token}`).expect(200);
  };
  const claimsOf = (token: string): { sub: string; sid: string; exp: number; iss: string; aud: string } =>
    jwt.decode(token) as { sub: string; sid: string; exp: number; iss: string; aud: string };

  it('bootstrap-admin creates an active super_admin and prints only a working token', async () => {
    const email = `boot-${randomUUID().slice(0, 8)}@example.com`;
    const run = await runCli(['bootstrap-admin', '--email', email, '--display-name', 'Boot Strap'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect(run.stderr).toContain('created super_admin user');
    const token = run.stdout.trim();
    await works(token);
    const claims = claimsOf(token);
    expect(claims).toMatchObject({ iss: 'admin-api', aud: 'admin-portal', sid: expect.stringMatching(UUID) });
    expect(claims.exp - Date.now() / 1000).toBeGreaterThan(12 * 3600 - 60);
    expect(
      await sql('SELECT email, display_name, role_id, status_id FROM users WHERE id = $1', [Number(claims.sub)]),
    ).toEqual([{ email, display_name: 'Boot Strap', role_id: 1, status_id: 2 }]);
    const events = await sql<{ action: string }>(
      "SELECT action FROM audit_events WHERE (resource_type = 'user' AND resource_id = $1) OR (resource_type = 'session' AND resource_id = $2) ORDER BY id",
      [claims.sub, claims.sid],
    );
    expect(events.map((event) => event.action)).toEqual(['user.create', 'session.create']);
  });

  it('bootstrap-admin reuses the account (email case-insensitive) and promotes a suspended viewer', async () => {
    const user = await createUser({ role: 'viewer', status: 'suspended' });
    const run = await runCli(['bootstrap-admin', '--email', user.email.toUpperCase()], env);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`reusing super_admin user ${user.id}`);
    expect(claimsOf(run.stdout.trim()).sub).toBe(String(user.id));
    await works(run.stdout.trim());
    expect(await sql('SELECT role_id, status_id FROM users WHERE id = $1', [user.id])).toEqual([
      { role_id: 1, status_id: 2 },
    ]);
  });

  it('issue-token prints a token for a new session with the requested lifetime', async () => {
    const user = await createUser({ role: 'viewer' });
    const run = await runCli(['issue-token', '--user-id', String(user.id), '--ttl-seconds', '120'], env);
    expect(run.code).toBe(0);
    const token = run.stdout.trim();
    await works(token);
    expect(claimsOf(token).exp - Date.now() / 1000).toBeLessThanOrEqual(121);
    expect(await sql('SELECT user_id FROM auth_sessions WHERE id = $1', [claimsOf(token).sid])).toEqual([
      { user_id: user.id },
    ]);
  });

  it(
    'its writes reach the feed with the resource as the API shows it, plus changes (part 6.12)',
    async () => {
      const reader = await actor('super_admin');
      const read = (path: string) => t.http().get(path).set('Authorization', reader.auth).expect(200);
      const start = (await read('/v1/admin/events?limit=1000')).body.meta.next_after as string | null;

      const cli = async (...args: string[]): Promise<string> => (await runCli(args, env)).stdout.trim();
      const created = claimsOf(await cli('bootstrap-admin', '--email', `feed-${randomUUID()}@example.com`));
      const promoted = await createUser({ role: 'viewer', status: 'suspended' });
      const reused = claimsOf(await cli('bootstrap-admin', '--email', promoted.email));
      const issued = claimsOf(await cli('issue-token', '--user-id', String(promoted.id)));
      const sessionId = await cli('create-session', '--user-id', String(promoted.id));

      const events: { type: string; resource_id: unknown; data: Record<string, unknown> }[] = [];
      for (let after = start; ;) {
        const page = await read(
          `/v1/admin/events?limit=1000&types=user.create,user.update,session.create${after === null ? '' : `&after=${after}`}`,
        );
        if (page.body.data.length === 0) break;
        events.push(...page.body.data);
        after = page.body.meta.next_after;
      }
      const dataOf = (type: string, id: unknown) => {
        const found = events.filter((event) => event.type === type && event.resource_id === id);
        expect(found).toHaveLength(1);
        const { changes, ...resource } = found[0]?.data ?? {};
        expect(changes).toEqual(expect.any(Object));
        return resource;
      };
      const user = async (id: string) => (await read(`/v1/admin/users/${id}`)).body.data;
      const session = async (userId: string, id: string) =>
        (await read(`/v1/admin/users/${userId}/sessions?page_size=100`)).body.data.find(
          (row: { id: string }) => row.id === id,
        );

      expect(dataOf('user.create', Number(created.sub))).toEqual(await user(created.sub));
      expect(dataOf('user.update', promoted.id)).toEqual(await user(String(promoted.id)));
      expect(dataOf('user.update', promoted.id)).toMatchObject({ role_id: 1, status_id: 2 });
      for (const [userId, id] of [
        [created.sub, created.sid],
        [reused.sub, reused.sid],
        [issued.sub, issued.sid],
        [String(promoted.id), sessionId],
      ] as const) {
        expect(dataOf('session.create', id)).toEqual(await session(userId, id));
        expect(dataOf('session.create', id)).toMatchObject({
          user_id: Number(userId),
          is_active: true,
          revoked_at: null,
        });
      }
    },
    6 * PER_PROCESS_MS,
  );

  it('create-session prints only the new session id', async () => {
    const user = await createUser({ role: 'operator' });
    const run = await runCli(['create-session', '--user-id', String(user.id)], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^${UUID.source.slice(1, -1)}\\n$`));
    expect(await sql('SELECT user_id, revoked_at FROM auth_sessions WHERE id = $1', [run.stdout.trim()])).toEqual([
      { user_id: user.id, revoked_at: null },
    ]);
  });

  it('seed-demo is idempotent: a second run adds nothing', async () => {
    // The seed's own messages (other specs may notify demo admins, as approvers, meanwhile).
    const count = async () =>
      sql(
        "SELECT (SELECT count(*) FROM users WHERE email LIKE 'demo-user-%')::int AS users, (SELECT count(*) FROM inbox_messages m JOIN users u ON u.id = m.user_id WHERE u.email LIKE 'demo-user-%' AND m.data ? 'demo_key')::int AS messages, (SELECT count(*) FROM devices WHERE serial_number LIKE 'DEMO-%')::int AS devices",
      );
    const first = await runCli(['seed-demo', '--users', '30'], env);
    expect({ code: first.code, stdout: first.stdout }).toEqual({ code: 0, stdout: '' });
    const after = await count();
    expect(after).toEqual([{ users: 30, messages: 90, devices: 15 }]);
    expect(first.stderr).toMatch(/users +30 added, +0 already there/);
    expect(first.stderr).toMatch(/devices +15 added, +0 already there/);
    // Teams: three groups (one nested in another), 9 users in them and the nesting, a group's
    // authority with two authority permissions, a group's grant.
    expect(first.stderr).toMatch(/groups +3 added, +0 already there/);
    expect(first.stderr).toMatch(/group_memberships +10 added, +0 already there/);
    expect(
      await sql(
        `SELECT (SELECT count(*) FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id
                 JOIN groups g ON g.id = a.group_id WHERE g.name = 'Demo night operators, building B')::int AS team_rights,
                (SELECT count(*) FROM permission_grants pg JOIN groups g ON g.id = pg.group_id WHERE g.name = 'Demo auditors')::int AS team_grants`,
      ),
    ).toEqual([{ team_rights: 2, team_grants: 1 }]);
    // Its hint names a real, active demo admin (30 users: no super_admin among them) and a real device.
    const [admin] = await sql<{ id: number }>(
      "SELECT id FROM users WHERE email LIKE 'demo-user-%' AND role_id = 2 AND status_id = 2 ORDER BY id LIMIT 1",
    );
    const [device] = await sql<{ id: number }>(
      "SELECT id FROM devices WHERE serial_number LIKE 'DEMO-%' ORDER BY id LIMIT 1",
    );
    expect(first.stderr).toContain(
      `sign in as demo admin ${admin?.id}: TOKEN=$(npx admin-api issue-token --user-id ${admin?.id})`,
    );
    expect(first.stderr).toContain(`/v1/admin/authorities?device_id=${device?.id}"`);
    const second = await runCli(['seed-demo', '--users', '30'], env);
    expect(await count()).toEqual(after);
    expect(second.stderr).toMatch(/users +0 added, +30 already there/);
    expect(second.stderr).toMatch(/inbox_messages +0 added, +90 already there/);
    expect(second.stderr).toMatch(/group_memberships +0 added, +10 already there/);
    expect((await runCli(['seed-demo', '--users', 'lots'], env)).code).toBe(2);
  }, 60_000);

  it('the package bin (npx admin-api) runs the same CLI on Node 24, with only the result on stdout', async () => {
    const user = await createUser({ role: 'viewer' });
    const bin = fileURLToPath(new URL('../../bin/admin-api', import.meta.url));
    // From another directory, the way an alias or a symlink would run it.
    const run = spawnSync(bin, ['issue-token', '--user-id', String(user.id)], {
      cwd: tmpdir(),
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect({ status: run.status, stdout: run.stdout.replace(/[\w-]+\.[\w-]+\.[\w-]+\n/, '<token>') }).toEqual({
      status: 0,
      stdout: '<token>',
    });
    await works(run.stdout.trim());
    const version = spawnSync(
      '/bin/sh',
      ['-c', `. ${fileURLToPath(new URL('../../scripts/node.sh', import.meta.url))} && node -p process.versions.node`],
      {
        encoding: 'utf8',
      },
    );
    expect(Number(version.stdout.split('.')[0])).toBeGreaterThanOrEqual(24);
  }, 60_000);

  it(
    'every command describes itself on stdout with --help, exit 0, without touching the database',
    async () => {
      const top = await runCli(['--help'], {});
      expect({ code: top.code, stderr: top.stderr }).toEqual({ code: 0, stderr: '' });
      expect(top.stdout).toContain('usage: admin-api <command> [options]');
      const commands = ['migrate', 'bootstrap-admin', 'issue-token', 'create-session', 'seed-demo'];
      for (const command of commands) expect(top.stdout).toContain(`  ${command}`);
      // No DATABASE_URL and no JWT_SECRET: help must not need them (nor start an embedded PostgreSQL).
      const asks = commands.flatMap((command) => [
        { command, args: [command, '--help'] },
        { command, args: ['help', command] },
      ]);
      const runs = await eachLimited(asks, 3, ({ args }) => runCli(args, { DATA_DIR: '/nonexistent/admin-api-help' }));
      asks.forEach(({ command, args }, index) => {
        const run = runs[index];
        expect({ args, code: run?.code, stderr: run?.stderr }).toEqual({ args, code: 0, stderr: '' });
        expect(run?.stdout).toContain(`usage: admin-api ${command}`);
      });
      const tokenHelp = await runCli(['issue-token', '--help'], {});
      expect(tokenHelp.stdout).toContain('--ttl-seconds S  how long the session lives, 1–2592000 seconds');
    },
    12 * PER_PROCESS_MS,
  ); // twelve CLI processes

  it(
    'help and option errors load no TypeORM, pg or Nest; a command does',
    async () => {
      const trace = fileURLToPath(new URL('../support/module-trace.mjs', import.meta.url));
      const loaded = async (args: string[], settings: Record<string, string>) => {
        const file = join(tmpdir(), `admin-api-modules-${randomUUID()}.txt`);
        const run = await runCli(args, {
          ...settings,
          NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${trace}`.trim(),
          MODULE_TRACE_FILE: file,
        });
        try {
          return { code: run.code, modules: readFileSync(file, 'utf8').split('\n') };
        } finally {
          rmSync(file, { force: true });
        }
      };
      // The packages among the loaded modules that only a command's work needs.
      const heavy = (modules: string[]): string[] => [
        ...new Set(
          modules.flatMap(
            (url) => /\/node_modules\/(typeorm|pg|pg-[^/]+|@nestjs\/[^/]+|class-validator)\//.exec(url)?.[1] ?? [],
          ),
        ),
      ];
      const cheap: [string[], number][] = [
        [['--help'], 0],
        [['issue-token', '--help'], 0],
        [['help', 'seed-demo'], 0],
        [['bootstrap-admin', '--admin'], 2],
      ];
      for (const [args, code] of cheap) {
        const run = await loaded(args, { DATA_DIR: '/nonexistent/admin-api-help' });
        expect({ args, code: run.code, heavy: heavy(run.modules) }).toEqual({ args, code, heavy: [] });
      }
      // The trace sees a command's database code, so the empty lists above say something.
      const migrate = await loaded(['migrate'], env);
      expect(migrate.code).toBe(0);
      expect(heavy(migrate.modules)).toEqual(expect.arrayContaining(['typeorm', 'pg']));
    },
    5 * PER_PROCESS_MS,
  ); // five CLI processes

  it(
    'fails with one clear line and nothing on stdout for bad input',
    async () => {
      const suspended = await createUser({ status: 'suspended' });
      const cases: [string[], Record<string, string>, number, string][] = [
        [['bootstrap-admin'], env, 2, '--email must be an email address'],
        [
          ['bootstrap-admin', '--email', 'a@example.com', '--admin'],
          env,
          2,
          'bootstrap-admin: unknown option --admin (admin-api bootstrap-admin --help lists the options)',
        ],
        [['issue-token'], env, 2, 'issue-token: --user-id is required: the id of an active user'],
        [['issue-token', '--user-id'], env, 2, 'issue-token: --user-id needs a value'],
        [
          ['issue-token', '--user-id', '1', '--ttl-seconds', '0'],
          env,
          2,
          '--ttl-seconds must be an integer between 1 and 2592000',
        ],
        [['seed-demo', 'now'], env, 2, 'seed-demo: unexpected argument "now": options take the form --name value'],
        [['launch'], env, 2, 'unknown command "launch"'],
        [['help', 'launch'], env, 2, 'unknown command "launch"'],
        [['migrate', '--dry-run'], env, 2, 'migrate: unknown option --dry-run'],
        [
          ['issue-token', '--user-id', '1', '--user-id', '2'],
          env,
          2,
          'issue-token: --user-id is given twice; give it once',
        ],
        [
          ['issue-token', '--user-id', '-1'],
          env,
          2,
          'issue-token: --user-id needs a value; a value starting with "-" goes as --user-id=<value>',
        ],
        [['issue-token', '--user-id=-1'], env, 2, '--user-id must be an integer between 1 and'],
        [['issue-token', '--user-id', String(suspended.id)], env, 1, `user ${suspended.id} is not active`],
        [['issue-token', '--user-id', '987654321'], env, 1, 'user 987654321 does not exist'],
        [['issue-token', '--user-id', 'x'], env, 2, '--user-id must be an integer'],
        [
          ['issue-token', '--user-id', '1'],
          { DATABASE_URL: testDatabaseUrl(), JWT_JWKS_URL: 'http://127.0.0.1:9/jwks.json' },
          1,
          'needs secret mode',
        ],
        [
          ['issue-token', '--user-id', '1'],
          { DATABASE_URL: testDatabaseUrl() },
          1,
          'Invalid setting JWT_SECRET: is required when DATABASE_URL is set',
        ],
      ];
      const runs = await eachLimited(cases, 3, ([args, settings]) => runCli(args, settings));
      cases.forEach(([args, , code, message], index) => {
        const run = runs[index];
        expect({ args, code: run?.code, stdout: run?.stdout }).toEqual({ args, code, stdout: '' });
        expect(run?.stderr).toContain(message);
      });
    },
    18 * PER_PROCESS_MS,
  ); // eighteen CLI processes
});
