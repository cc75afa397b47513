import { createClient } from '@keyv/redis';
import type { Logger } from '@nestjs/common';
import type { RedisConnection, StampedValues } from './redis-connection.js';
import type { RedisScript } from './redis-scripts.js';
import { closeWithin, runScript, SOCKET, throttledWarn } from './redis-support.js';
import { ServerIdentity, type Identity } from './server-identity.js';
import { TurnReads } from './turn-reads.js';
import { masterStamp } from './stored-values.js';

type Client = ReturnType<typeof createClient>;

/** Every event after which the client may be talking to another server. */
const CONNECTION_EVENTS = ['connect', 'ready', 'error', 'end', 'reconnecting'] as const;

/** One Redis server through the client of `@keyv/redis`. */
export class SingleConnection implements RedisConnection {
  readonly isCluster = false;
  private readonly client: Client;
  private readonly server: ServerIdentity;
  private readonly reads = new TurnReads(
    (keys) => this.client.mGet(keys),
    () => this.client.info('replication'),
  );
  /** The first connection, awaited by calls made before it is up (within their budget); later outages fail at once. */
  private connecting: Promise<void> | undefined;

  constructor(url: string, logger: Logger) {
    const warn = throttledWarn(logger);
    this.client = createClient({ url, disableOfflineQueue: true, socket: SOCKET });
    this.client.on('error', (error: unknown) => warn('redis connection error', error));
    this.server = new ServerIdentity(() => this.askServer());
    for (const event of CONNECTION_EVENTS) this.client.on(event, () => this.server.changed());
    this.connecting = this.client.connect().then(
      () => {
        this.connecting = undefined;
      },
      (error: unknown) => {
        this.connecting = undefined;
        warn('redis is not reachable yet; serving from the database', error);
      },
    );
  }

  async eval(script: RedisScript, keys: readonly string[], args: readonly string[] = []): Promise<unknown> {
    if (this.connecting !== undefined) await this.connecting;
    return runScript(this.client, script, keys, args);
  }

  async mget(identity: Identity, keys: readonly string[]): Promise<StampedValues> {
    if (this.connecting !== undefined) await this.connecting;
    // The values, then what the server is (asked after them on the same connection, once for all
    // the reads of this turn, sent with them). A connection may stay open while its server becomes
    // a replica and takes another's data (FAILOVER, a resync after Sentinel closed the clients):
    // only the server's answer of now tells.
    const { values, answer: replication } = await this.reads.read(keys);
    const stamp = masterStamp(identity.runId, replication);
    if (stamp !== identity.stamp) this.server.recheck(identity);
    return { values, stamp };
  }

  identity(): Identity | Promise<Identity> {
    if (this.connecting !== undefined) return this.connecting.then(() => this.server.current());
    return this.server.current();
  }

  still(identity: Identity): boolean {
    return this.server.still(identity);
  }

  async *scan(pattern: string): AsyncIterable<string[]> {
    yield* this.client.scanIterator({ MATCH: pattern, COUNT: 1000 });
  }

  async ping(): Promise<void> {
    if (this.connecting !== undefined) await this.connecting;
    await this.client.ping();
  }

  failed(): void {
    // The client reconnects by itself; one server has no slots to re-read.
  }

  /** The server's run id, and its stamp as a master ('' when it is a replica), in one answer. */
  private async askServer(): Promise<{ runId: string; stamp: string }> {
    const reply: unknown = await this.client.sendCommand(['INFO', 'server', 'replication']);
    const info = typeof reply === 'string' ? reply : '';
    const runId = /^run_id:(\w+)/m.exec(info)?.[1] ?? '';
    return { runId, stamp: masterStamp(runId, info) };
  }

  /** A polite QUIT when Redis answers; with Redis gone, drop the socket instead of waiting for it. */
  async close(): Promise<void> {
    if (!this.client.isOpen) return;
    if (!this.client.isReady) {
      this.client.destroy();
      return;
    }
    await closeWithin(
      () => this.client.close(),
      () => this.client.destroy(),
    );
  }
}
