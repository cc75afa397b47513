import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@keyv/redis';
import { freePort } from './ports.mjs';

export { freePort } from './ports.mjs';

/** A redis-server this test owns, so it may pause, resume or kill it. */
export class OwnRedis {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static async start(): Promise<OwnRedis> {
    const port = await freePort();
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const redis = new OwnRedis(child, `redis://127.0.0.1:${port}`);
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const client = createClient({ url: redis.url, socket: { reconnectStrategy: false } });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.ping();
        await client.close();
        return redis;
      } catch {
        await sleep(100);
      }
    }
    child.kill('SIGKILL');
    throw new Error('redis-server did not start');
  }

  pause(): void {
    this.child.kill('SIGSTOP');
  }

  resume(): void {
    this.child.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGCONT');
    this.child.kill('SIGKILL');
    await exited;
  }
}
