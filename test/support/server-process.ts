import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** `npm run start:prod` as a child process: the built server, with only the given settings. */
const MAIN = new URL('../../dist/src/main.js', import.meta.url).pathname;

export interface Running {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

export function startServer(env: Record<string, string>): Running {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !['DATABASE_URL', 'REDIS_URL', 'JWT_SECRET'].includes(key)),
  );
  const child = spawn(process.execPath, [MAIN], {
    // This run's Redis key prefix, like the in-process apps (a spec may choose another).
    env: {
      ...clean,
      LOG_LEVEL: 'info',
      CACHE_KEY_PREFIX: process.env.ADMIN_API_TEST_CACHE_PREFIX ?? 'admin-api:',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

export async function waitReady(
  port: number,
  server: Running,
): Promise<{ status: number; body: { data: { database: string; cache: string } } }> {
  for (let attempt = 0; attempt < 300; attempt += 1) {
    if (server.child.exitCode !== null)
      throw new Error(`server exited with ${server.child.exitCode}: ${server.output().slice(-3000)}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/health/ready`);
      return {
        status: response.status,
        body: (await response.json()) as { data: { database: string; cache: string } },
      };
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`server never answered: ${server.output()}`);
}
