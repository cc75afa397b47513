import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import house from './eslint/layers.js';

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
      'eslint/',
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
  // The layers (eslint/layers.js): the platform is a strict stack importing no feature and no access
  // model, for every file under src/platform/ and dynamic import() as well as static imports.
  {
    files: ['src/**/*.ts', 'src/**/*.mts', 'src/**/*.mjs'],
    plugins: { house },
    rules: { 'house/layers': 'error' },
  },
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
