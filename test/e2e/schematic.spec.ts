import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PERMISSIONS } from '../../src/platform/auth/permissions.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const SKIP = ['node_modules', 'dist', '.data', '.git', 'bench', 'coverage'];

/** Runs a command in the copy; returns its exit code and output. */
function run(cwd: string, args: string[], env: Record<string, string> = {}): { code: number | null; output: string } {
  const result = spawnSync(process.execPath, args, {
    cwd,
    // The inner runs name their specs: every tier, whichever this run was started with.
    env: { ...process.env, ADMIN_API_TEST_TIER: 'all', ...env },
    encoding: 'utf8',
    // Type-aware ESLint or a build in the copy takes minutes on a loaded machine.
    timeout: 300_000,
  });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

const NEST = ['node_modules/@nestjs/cli/bin/nest.js', 'g', 'action'];
const GENERATE = ['scripts/generate.mjs', 'action'];

/**
 * One action per domain module, and one per device-scoped resource (found through its locator),
 * made with `nest g action` or, where options are needed, `npm run generate`.
 */
const ACTIONS = [
  {
    command: [...NEST, 'users', 'lock'],
    url: 'users',
    verb: 'lock',
    file: 'src/users/users-lock.action.ts',
    permission: 'users.lock',
  },
  {
    command: [...NEST, 'authorities', 'suspend'],
    url: 'authorities',
    verb: 'suspend',
    file: 'src/authorities/authorities-suspend.action.ts',
    permission: 'authorities.suspend',
    device: 'AUTHORITY',
  },
  {
    command: [...NEST, 'authorities/devices', 'reboot'],
    url: 'devices',
    verb: 'reboot',
    file: 'src/authorities/devices-reboot.action.ts',
    permission: 'devices.reboot',
    device: 'DEVICE',
  },
  {
    command: [...NEST, 'grants', 'renew'],
    url: 'permission-grants',
    verb: 'renew',
    file: 'src/grants/permission-grants-renew.action.ts',
    permission: 'permission_grants.renew',
  },
  {
    command: [...GENERATE, 'grants', 'refresh', '--controller', 'authority-permissions', '--device-param', 'id'],
    url: 'authority-permissions',
    verb: 'refresh',
    file: 'src/grants/authority-permissions-refresh.action.ts',
    permission: 'authority_permissions.refresh',
    device: 'AUTHORITY_PERMISSION',
  },
  {
    command: [...NEST, 'inbox', 'flag'],
    url: 'inbox',
    verb: 'flag',
    file: 'src/inbox/inbox-flag.action.ts',
    permission: 'inbox.flag',
  },
  {
    command: [...NEST, 'read-state', 'star'],
    url: 'message-read-state',
    verb: 'star',
    file: 'src/read-state/message-read-state-star.action.ts',
    permission: 'read_state.star',
  },
  {
    command: [...GENERATE, 'mobile-devices', 'ping'],
    url: 'mobile-devices',
    verb: 'ping',
    file: 'src/mobile-devices/mobile-devices-ping.action.ts',
    permission: 'mobile_devices.ping',
  },
] as const;

describe('nest g action (the schematic, in a temporary copy of the project)', () => {
  let copy: string;
  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), 'admin-api-schematic-'));
    cpSync(ROOT, copy, {
      recursive: true,
      filter: (source) => !SKIP.some((name) => source === join(ROOT, name) || source.startsWith(join(ROOT, name, '/'))),
    });
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it('refuses what cannot work, with a message that says why', () => {
    expect(run(copy, [...NEST, 'devices', 'lock']).output).toContain(
      '"devices" is not a domain module; choose one of users, authorities, grants, inbox, read-state, mobile-devices',
    );
    expect(run(copy, [...GENERATE, 'grants', 'lock', '--controller', 'roles']).output).toContain(
      '"roles" is not a resource of grants',
    );
    expect(run(copy, [...GENERATE, 'inbox', 'flag', '--device-param', 'id']).output).toContain(
      '/inbox is not device-scoped',
    );
    const typo = run(copy, [...GENERATE, 'inbox', 'flag', '--device', 'id']);
    expect(typo).toEqual({ code: 2, output: expect.stringContaining('unknown or incomplete option --device') });
  });

  it('generates, for every domain, code that compiles, lints and is formatted, a spec that fails until the action is implemented, then passes', () => {
    for (const [index, action] of ACTIONS.entries()) {
      const generated = run(copy, [...action.command]);
      expect({ command: action.command, code: generated.code }).toEqual({ command: action.command, code: 0 });
      expect(generated.output).toContain(action.file);
      // The next free id after the catalogue as it stands.
      expect(readFileSync(join(copy, 'src/platform/auth/permissions.ts'), 'utf8')).toContain(
        `{ id: ${PERMISSIONS.length + 1 + index}, code: '${action.permission}' }`,
      );
      const controller = readFileSync(
        join(copy, `src/${action.file.split('/')[1]}/${action.url}.controller.ts`),
        'utf8',
      );
      expect(controller).toContain(`permission: '${action.permission}'`);
      if ('device' in action) expect(controller).toContain(`device: deviceOf(${action.device}, 'id')`);
    }

    expect(run(copy, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'])).toEqual({
      code: 0,
      output: '',
    });
    const lint = run(copy, [
      'node_modules/eslint/bin/eslint.js',
      '--max-warnings',
      '0',
      'src',
      'migrations',
      'test/e2e',
    ]);
    expect(lint).toEqual({ code: 0, output: '' });
    const format = run(copy, ['node_modules/prettier/bin/prettier.cjs', '--check', 'src', 'migrations', 'test']);
    expect({ code: format.code, output: format.code === 0 ? '' : format.output }).toEqual({ code: 0, output: '' });

    // The inner run is a run of its own: its own database and Redis key prefix.
    const specs = ACTIONS.map((action) => `test/e2e/${action.url}-${action.verb}.spec.ts`);
    const runSpecs = () => {
      expect(run(copy, ['node_modules/@nestjs/cli/bin/nest.js', 'build']).code).toBe(0);
      return run(copy, ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', ...specs]);
    };
    const unimplemented = runSpecs();
    expect(unimplemented.code).toBe(1);
    // Each spec's main case fails; the permission case passes, and so does the owner case of the three device-scoped ones.
    expect(unimplemented.output).toContain('Tests:       8 failed, 11 passed, 19 total');

    for (const action of ACTIONS) {
      const file = join(copy, action.file);
      const source = readFileSync(file, 'utf8');
      const stub = /throw new Error\('[^']+ is not implemented yet'\);/;
      expect(source).toMatch(stub);
      writeFileSync(file, source.replace(stub, 'return new ResourceResponse({ id });'));
    }
    const implemented = runSpecs();
    expect({ code: implemented.code, tail: implemented.code === 0 ? '' : implemented.output.slice(-3000) }).toEqual({
      code: 0,
      tail: '',
    });
  }, 900_000);
});
