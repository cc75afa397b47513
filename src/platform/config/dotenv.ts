import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Reads `.env` from the working directory when there is one, as NestJS users expect (Node's own
 * parser, no dependency). A variable already in the environment wins: the file is for defaults on
 * a developer's machine, never for overriding what a deployment sets. Answers the file read.
 */
export function loadDotEnv(directory = process.cwd()): string | undefined {
  const file = resolve(directory, '.env');
  if (!existsSync(file)) return undefined;
  process.loadEnvFile(file);
  return file;
}
