import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDotEnv } from '../../src/platform/config/dotenv.js';

describe('.env in the working directory', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'admin-api-dotenv-'));
  });
  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
    delete process.env.ADMIN_API_DOTENV_FROM_FILE;
    delete process.env.ADMIN_API_DOTENV_ALREADY_SET;
  });

  it('is read when present, and never overrides what the environment already says', () => {
    writeFileSync(
      join(directory, '.env'),
      '# a comment\nADMIN_API_DOTENV_FROM_FILE=file value\nADMIN_API_DOTENV_ALREADY_SET=from the file\n',
    );
    process.env.ADMIN_API_DOTENV_ALREADY_SET = 'from the environment';
    expect(loadDotEnv(directory)).toBe(join(directory, '.env'));
    expect(process.env.ADMIN_API_DOTENV_FROM_FILE).toBe('file value');
    expect(process.env.ADMIN_API_DOTENV_ALREADY_SET).toBe('from the environment');
  });

  it('is no error when absent', () => {
    expect(loadDotEnv(directory)).toBeUndefined();
    expect(process.env.ADMIN_API_DOTENV_FROM_FILE).toBeUndefined();
  });
});
