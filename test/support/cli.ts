import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

const CLI = new URL('../../dist/src/cli.js', import.meta.url).pathname;
const INHERITED_SETTINGS = ['DATABASE_URL', 'REDIS_URL', 'JWT_SECRET', 'JWT_JWKS_URL'];

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built CLI (`npm run cli -- …` without the build step) with only the given settings. */
export function runCli(args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  return collected(spawn(process.execPath, [CLI, ...args], { env: only(env), stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** Runs `bash -c script` in `cwd` as a reader's shell would: none of the test run's own settings. */
export function runShell(script: string, cwd: string, env: Record<string, string>): Promise<CliRun> {
  return collected(spawn('bash', ['-c', script], { cwd, env: only(env), stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** This process's environment without the test run's own settings, and `env`. */
function only(env: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !INHERITED_SETTINGS.includes(key))),
    ...env,
  };
}

/** A child's exit code and everything it printed, once it closed. */
function collected(child: ChildProcessByStdio<null, Readable, Readable>): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
