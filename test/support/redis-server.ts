import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@keyv/redis';
import { freePort } from './ports.mjs';

export { freePort } from './ports.mjs';

/**
 * A redis-server this test owns, so it may pause, resume or kill it. It works in a directory of its
 * own: a replica that syncs through disk writes a dump.rdb there, which a server started later in
 * the same directory would load (another test's data, and its replication history).
 */
export class OwnRedis {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    private readonly dir: string,
  ) {}

  static async start(): Promise<OwnRedis> {
    const port = await freePort();
    const dir = await mkdtemp(join(tmpdir(), 'own-redis-'));
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    );
    const redis = new OwnRedis(child, `redis://127.0.0.1:${port}`, dir);
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
    await rm(dir, { recursive: true, force: true });
    throw new Error('redis-server did not start');
  }

  pause(): void {
    this.child.kill('SIGSTOP');
  }

  resume(): void {
    this.child.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGCONT');
      this.child.kill('SIGKILL');
      await exited;
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}
