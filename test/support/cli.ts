import { spawn } from 'node:child_process';

const CLI = new URL('../../dist/src/cli.js', import.meta.url).pathname;
const INHERITED_SETTINGS = ['DATABASE_URL', 'REDIS_URL', 'JWT_SECRET', 'JWT_JWKS_URL'];

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built CLI (`npm run cli -- …` without the build step) with only the given settings. */
export function runCli(args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !INHERITED_SETTINGS.includes(key)));
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
