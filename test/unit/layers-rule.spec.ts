import { Linter } from 'eslint';
import { join } from 'node:path';
import tseslint from 'typescript-eslint';
import house, { PLATFORM_LAYERS } from '../../eslint/layers.js';

/*
 * The layers rule (eslint/layers.js) on planted files: each refusal the architecture review found
 * a way around (a top-level platform file, a dynamic import()) and each step of the stack.
 */

const ROOT = new URL('../../', import.meta.url).pathname;

function refusals(file: string, code: string): string[] {
  const linter = new Linter({ configType: 'flat' });
  const messages = linter.verify(
    code,
    [
      {
        files: ['**/*.ts', '**/*.mts', '**/*.mjs'],
        languageOptions: { parser: tseslint.parser },
        plugins: { house },
        rules: { 'house/layers': 'error' },
      },
    ],
    { filename: join(ROOT, file) },
  );
  return messages.map((message) => message.message);
}

describe('the layers rule refuses what would make the platform less than a strict stack', () => {
  it('a file directly in src/platform/ (it has no layer), even one that imports only the platform', () => {
    expect(refusals('src/platform/shortcut.ts', "import { UsersService } from '../users/users.service.js';")).toEqual([
      'A file directly in src/platform/ has no layer: put it in the folder of its layer.',
    ]);
    expect(refusals('src/platform/helpers.ts', "import { ApiError } from './http/api-error.js';")).toHaveLength(1);
  });

  it('a dynamic import() of a feature, a computed import() and an import() type', () => {
    expect(
      refusals('src/platform/cache/planted.ts', "export const load = () => import('../../users/users.service.js');"),
    ).toEqual(['The platform imports no feature: register into the platform from above instead.']);
    expect(refusals('src/platform/cache/planted.ts', 'export const load = (name: string) => import(name);')).toEqual([
      'An import() with a computed path is refused here: name the module.',
    ]);
    expect(
      refusals('src/platform/http/planted.ts', "export type Row = import('../../users/users.repository.js').UserRow;"),
    ).toHaveLength(1);
  });

  it('an import up the stack, static or re-exported', () => {
    expect(
      refusals('src/platform/database/planted.ts', "import { CacheService } from '../cache/cache.service.js';"),
    ).toEqual(['src/platform/database/ may import only config, http: cache is not below it.']);
    expect(refusals('src/platform/http/list/planted.ts', "export * from '../../database/unit-of-work.js';")).toEqual([
      'src/platform/http/ may import only config: database is not below it.',
    ]);
  });

  it('the platform importing the access model, and the access model importing a feature', () => {
    expect(
      refusals('src/platform/auth/planted.ts', "import { AccessWatch } from '../../access-model/access-watch.js';"),
    ).toEqual(['The platform imports no access model: register into the platform from above instead.']);
    expect(
      refusals('src/access-model/planted.ts', "import { UsersService } from '../users/users.service.js';"),
    ).toEqual(['The access model imports only the platform: features reach it, not the other way round.']);
  });

  it('lets through what the stack allows: down the stack, packages, the migrations from the database, features anywhere', () => {
    expect(refusals('src/platform/auth/ok.ts', "import { CacheService } from '../cache/cache.service.js';")).toEqual(
      [],
    );
    expect(refusals('src/platform/cache/ok.ts', "import { createClient } from '@keyv/redis';")).toEqual([]);
    expect(
      refusals('src/platform/database/ok.ts', "import { MIGRATIONS } from '../../../migrations/index.js';"),
    ).toEqual([]);
    expect(refusals('src/platform/cache/ok.ts', 'export const load = (p: string) => import(`@scope/${p}`);')).toEqual(
      [],
    );
    expect(
      refusals('src/access-model/ok.ts', "import { UnitOfWork } from '../platform/database/unit-of-work.js';"),
    ).toEqual([]);
    expect(refusals('src/users/ok.ts', "import { AccessWatch } from '../access-model/access-watch.js';")).toEqual([]);
  });

  it('names every folder of src/platform/ as a layer that imports only layers named before it', () => {
    const names = Object.keys(PLATFORM_LAYERS);
    for (const [index, name] of names.entries())
      for (const below of PLATFORM_LAYERS[name] ?? []) expect(names.indexOf(below)).toBeLessThan(index);
  });
});

describe('the layers rule against the second review’s attacks (issue 39)', () => {
  it('refuses `export * from` a feature, `import x = require()`, and the path that climbs back through the platform', () => {
    expect(refusals('src/platform/cache/planted.ts', "export * from '../../users/users.service.js';")).toHaveLength(1);
    expect(
      refusals('src/platform/cache/planted.ts', "import users = require('../../users/users.service.js');"),
    ).toHaveLength(1);
    expect(
      refusals('src/access-model/planted.ts', "import { UsersService } from '../platform/../users/users.service.js';"),
    ).toHaveLength(1);
  });

  it('refuses the same imports in .mts and .mjs files under src/platform', () => {
    expect(
      refusals('src/platform/cache/planted.mts', "import { x } from '../../users/users.service.js';"),
    ).toHaveLength(1);
    expect(
      refusals('src/platform/cache/planted.mjs', "import { x } from '../../users/users.service.js';"),
    ).toHaveLength(1);
  });

  it('refuses template-literal paths that name a feature', () => {
    expect(
      refusals('src/platform/cache/planted.ts', 'export const l = () => import(`../../users/users.service.js`);'),
    ).toHaveLength(1);
    expect(
      refusals('src/platform/cache/planted.ts', "export const l = () => import(`../../users/${'users'}.service.js`);"),
    ).toHaveLength(1);
  });

  it('refuses a feature loaded through createRequire()', () => {
    expect(
      refusals(
        'src/platform/cache/planted.ts',
        "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\nexport const users = require('../../users/users.service.js');",
      ),
    ).toHaveLength(1);
  });

  it('refuses a feature named by a file: URL', () => {
    const url = `file://${join(ROOT, 'src/users/users.service.js')}`;
    expect(refusals('src/platform/cache/planted.ts', `export const l = () => import('${url}');`)).toHaveLength(1);
    expect(refusals('src/platform/cache/planted.ts', `import { x } from '${url}';`)).toHaveLength(1);
  });
});
