import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PERMISSIONS } from '../../src/auth/permissions.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const SKIP = ['node_modules', 'dist', '.data', '.git', 'bench', 'coverage'];

/** Runs a command in the copy; returns its exit code and output. */
function run(cwd: string, args: string[], env: Record<string, string> = {}): { code: number | null; output: string } {
  const result = spawnSync(process.execPath, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 120_000 });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('nest g action (the schematic, in a temporary copy of the project)', () => {
  let copy: string;
  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), 'admin-api-schematic-'));
    cpSync(ROOT, copy, { recursive: true, filter: (source) => !SKIP.some((name) => source === join(ROOT, name) || source.startsWith(join(ROOT, name, '/'))) });
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it('generates code that compiles and lints clean, a spec that fails until the action is implemented, then passes', () => {
    const generated = run(copy, ['node_modules/@nestjs/cli/bin/nest.js', 'g', 'action', 'authorities', 'suspend']);
    expect(generated.code).toBe(0);
    for (const file of ['src/authorities/authorities-suspend.action.ts', 'src/authorities/suspend.dto.ts', 'test/e2e/authorities-suspend.spec.ts']) expect(generated.output).toContain(file);
    // The next free id after the catalogue as it stands.
    expect(readFileSync(join(copy, 'src/auth/permissions.ts'), 'utf8')).toContain(`{ id: ${PERMISSIONS.length + 1}, code: 'authorities.suspend' }`);
    expect(readFileSync(join(copy, 'src/authorities/authorities.controller.ts'), 'utf8')).toContain("@Authorize({ permission: 'authorities.suspend'");

    expect(run(copy, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'])).toEqual({ code: 0, output: '' });
    const lint = run(copy, ['node_modules/eslint/bin/eslint.js', '--max-warnings', '0', 'src/authorities', 'src/auth/permissions.ts', 'migrations', 'test/e2e/authorities-suspend.spec.ts']);
    expect(lint).toEqual({ code: 0, output: '' });

    // Its own Redis database: the outer run's specs share database 15 and must not see a flush.
    const spec = () => {
      expect(run(copy, ['node_modules/@nestjs/cli/bin/nest.js', 'build']).code).toBe(0);
      return run(copy, ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', 'test/e2e/authorities-suspend.spec.ts'], { TEST_REDIS_URL: 'redis://127.0.0.1:6379/13' });
    };
    const unimplemented = spec();
    expect(unimplemented.code).toBe(1);
    expect(unimplemented.output).toContain('Tests:       1 failed, 1 passed, 2 total');

    const action = join(copy, 'src/authorities/authorities-suspend.action.ts');
    writeFileSync(action, readFileSync(action, 'utf8').replace("throw new Error('authorities suspend is not implemented yet');", 'return new ResourceResponse({ id });'));
    const implemented = spec();
    expect({ code: implemented.code, tail: implemented.code === 0 ? '' : implemented.output.slice(-1500) }).toEqual({ code: 0, tail: '' });
  }, 300_000);
});
