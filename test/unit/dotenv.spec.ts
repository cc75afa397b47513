import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDotEnv } from '../../src/platform/config/dotenv.js';

describe('.env in the working directory', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'admin-api-dotenv-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('is read when present, and never overrides what the environment already says', () => {
    writeFileSync(
      join(directory, '.env'),
      '# a comment\nADMIN_API_DOTENV_FROM_FILE=file value\nADMIN_API_DOTENV_ALREADY_SET=from the file\n',
    );
    const env: NodeJS.ProcessEnv = { ADMIN_API_DOTENV_ALREADY_SET: 'from the environment' };
    expect(loadDotEnv(directory, env)).toBe(join(directory, '.env'));
    expect(env).toEqual({
      ADMIN_API_DOTENV_FROM_FILE: 'file value',
      ADMIN_API_DOTENV_ALREADY_SET: 'from the environment',
    });
  });

  it('is no error when absent', () => {
    const env: NodeJS.ProcessEnv = {};
    expect(loadDotEnv(directory, env)).toBeUndefined();
    expect(env).toEqual({});
  });
});
