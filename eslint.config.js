import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// class-validator's length rules do not count U+FE0E/U+FE0F; the columns' CHECKs do.
const LENGTH_RULES = {
  name: 'class-validator',
  importNames: ['Length', 'MaxLength', 'MinLength'],
  message:
    'Import Length, MaxLength and MinLength from src/platform/http/text-length.ts: they count characters as PostgreSQL does.',
};

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'coverage/',
      '.data/',
      'jest.config.js',
      'jest.unit.config.js',
      'eslint.config.js',
      'test/client/api.d.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/explicit-module-boundary-types': 'off',
      '@typescript-eslint/no-extraneous-class': 'off',
      // `_name` marks a parameter kept for its place in a signature; rest siblings drop fields.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      'no-restricted-imports': ['error', { paths: [LENGTH_RULES] }],
    },
  },
  // The platform floor (src/platform/) imports no feature: features register into it (bulk kinds,
  // queues, rebuild warmers) instead of being named by it. A relative import that climbs out of
  // src/platform/ is refused (the migrations are history, not a feature); the depth of each glob is
  // the depth of the importing file.
  ...[1, 2, 3].map((depth) => ({
    files: [`src/platform/${'*/'.repeat(depth)}*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [LENGTH_RULES],
          patterns: [
            {
              regex: `^(\\.\\./){${depth + 1}}(?!\\.\\./migrations/)`,
              message: 'The platform imports no feature: register into the platform from the feature instead.',
            },
          ],
        },
      ],
    },
  })),
  {
    // Plain ESM scripts over the compiled dist/ (benchmarks, Jest's global setup): linted, untyped.
    files: ['**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false, project: false },
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        Buffer: 'readonly',
        performance: 'readonly',
        URLSearchParams: 'readonly',
        setTimeout: 'readonly',
      },
    },
  },
  {
    // The Nest CLI schematic is CommonJS, loaded by the Angular devkit with require().
    files: ['schematics/**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      sourceType: 'commonjs',
      parserOptions: { projectService: false, project: false },
      globals: { require: 'readonly', module: 'writable' },
    },
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Specs read untyped JSON bodies from supertest; asserting on them is the point.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
);
