import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SettingsError, type Settings } from '../config/settings.js';

/**
 * Settles the verification mode before anything verifies or signs a token. With neither
 * JWT_SECRET nor JWT_JWKS_URL, embedded mode (no DATABASE_URL) generates a secret once into
 * DATA_DIR, shared by the server and the CLI; against an external database one must be chosen.
 */
export async function withJwtSecret(settings: Settings): Promise<Settings> {
  if (settings.jwtSecret !== undefined || settings.jwtJwksUrl !== undefined) return settings;
  if (settings.databaseUrl !== undefined) {
    throw new SettingsError(
      'JWT_SECRET',
      'is required when DATABASE_URL is set (or set JWT_JWKS_URL to verify tokens of an identity provider)',
    );
  }
  return Object.freeze({ ...settings, jwtSecret: await readOrCreateSecret(join(settings.dataDir, 'jwt-secret')) });
}

async function readOrCreateSecret(file: string): Promise<string> {
  await mkdir(join(file, '..'), { recursive: true });
  try {
    // `wx`: when the server and the CLI start together, exactly one of them creates the file.
    await writeFile(file, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const secret = (await readFile(file, 'utf8')).trim();
  if (secret.length < 32)
    throw new SettingsError(
      'JWT_SECRET',
      `the generated secret in ${file} is shorter than 32 characters; delete the file to regenerate it`,
    );
  return secret;
}
