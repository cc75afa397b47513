import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * Reads `.env` from the working directory when there is one, as NestJS users expect (Node's own
 * parser, no dependency). A variable already in the environment wins: the file is for defaults on
 * a developer's machine, never for overriding what a deployment sets. Answers the file read.
 */
export function loadDotEnv(directory = process.cwd(), env: NodeJS.ProcessEnv = process.env): string | undefined {
  const file = resolve(directory, '.env');
  if (!existsSync(file)) return undefined;
  for (const [name, value] of Object.entries(parseEnv(readFileSync(file, 'utf8'))))
    if (env[name] === undefined && value !== undefined) env[name] = value;
  return file;
}
