import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@keyv/redis';

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago, chosen below Linux's ephemeral range (32768-60999): a port
 * the kernel handed out (port 0) can be taken again by an outgoing connection before the
 * server binds it, which made a spec fail once with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const port = 15_000 + Math.floor(Math.random() * 15_000);
    if (await canListen(port)) return port;
  }
  throw new Error('no free port found in 15000-29999');
}

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
