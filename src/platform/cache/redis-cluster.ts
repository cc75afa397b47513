import { createCluster } from '@keyv/redis';
import type { Logger } from '@nestjs/common';
import { parseClusterUrl } from '../config/redis-url.js';
import type { RedisConnection, StampedValues } from './redis-connection.js';
import type { RedisScript } from './redis-scripts.js';
import { closeWithin, runScript, SOCKET, throttledWarn } from './redis-support.js';
import type { Identity } from './server-identity.js';

type Cluster = ReturnType<typeof createCluster>;

const NO_IDENTITY: Identity = Object.freeze({ runId: '', stamp: '', connection: 0 });

/**
 * A Redis Cluster through the node-redis cluster client. The client re-reads the slot map only on
 * a MOVED or ASK reply, never because a node went away: after a master dies its slots would keep
 * failing until something else moved. So a call that fails for want of a node re-reads the slots
 * and tries once more, and every failed call (a timeout too) asks for a re-read: while the cluster
 * promotes a replica the calls fail fast (the service bypasses the cache), and the first re-read
 * after the promotion sends them to the new master.
 */
export class ClusterConnection implements RedisConnection {
  readonly isCluster = true;
  private readonly cluster: Cluster;
  private readonly warn: (msg: string, error: unknown) => void;
  private connected: Promise<void> | undefined;
  private slotsKnown = false;
  private lastRefresh = 0;
  private refreshing: Promise<void> | undefined;
  private closed = false;

  constructor(url: string, logger: Logger) {
    const parsed = parseClusterUrl(url);
    if (parsed === undefined) throw new Error('REDIS_URL is not a cluster URL');
    this.warn = throttledWarn(logger);
    this.cluster = createCluster({
      rootNodes: parsed.nodes.map((node) => ({ socket: { ...node, ...SOCKET } })),
      // Discovered nodes take their options from here, not from the root nodes.
      defaults: {
        username: parsed.username,
        password: parsed.password,
        disableOfflineQueue: true,
        socket: { ...SOCKET, ...(parsed.tls ? { tls: true as const } : {}) },
      },
    });
    this.cluster.on('error', (error: unknown) => this.warn('redis cluster error', error));
    this.cluster.on('node-error', (error: unknown) => this.warn('redis cluster node error', error));
    this.connect();
  }

  async eval(script: RedisScript, keys: readonly string[], args: readonly string[] = []): Promise<unknown> {
    await this.ready();
    const call = () => runScript(this.cluster, script, keys, args);
    try {
      return await call();
    } catch (error) {
      if (!isTopologyError(error)) throw error;
      // Once more after re-reading the slots: a write's invalidation that fails only because this
      // instance still sends it to a dead master would be lost while the others read the new one.
      // Every script may run twice (compare-and-set, a bump, a count: at worst one more).
      await this.refresh();
      return call();
    }
  }

  mget(): Promise<StampedValues> {
    return Promise.reject(new Error('MGET crosses slots on a cluster: read through the scripts'));
  }

  /** The scripts ask their own server (a node's identity is not known before the slot map routes a call). */
  identity(): Identity {
    return NO_IDENTITY;
  }

  still(): boolean {
    return true;
  }

  async *scan(pattern: string): AsyncIterable<string[]> {
    await this.ready();
    for (const master of this.cluster.masters) {
      const client = await this.cluster.nodeClient(master);
      yield* client.scanIterator({ MATCH: pattern, COUNT: 1000 });
    }
  }

  async ping(): Promise<void> {
    await this.ready();
    await Promise.all(this.cluster.masters.map(async (master) => (await this.cluster.nodeClient(master)).ping()));
  }

  failed(): void {
    void this.refresh();
  }

  /** Re-reads the slot map (one re-read at a time, and none within 100 ms of the last). */
  private refresh(): Promise<void> {
    if (this.refreshing !== undefined) return this.refreshing;
    if (this.closed || !this.cluster.isOpen || Date.now() - this.lastRefresh < 100) return Promise.resolve();
    const masters = this.cluster.masters.map((master) => master.client).filter((client) => client !== undefined);
    const start = masters.find((client) => client.isReady) ?? masters[0];
    if (start === undefined) return Promise.resolve();
    // `rediscover` starts from the given node and falls back to the root nodes.
    this.refreshing = this.cluster._slots
      .rediscover(start)
      .catch((error: unknown) => this.warn('redis cluster slots not re-read', error))
      .finally(() => {
        this.refreshing = undefined;
        this.lastRefresh = Date.now();
      });
    return this.refreshing;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (!this.cluster.isOpen) return;
    await closeWithin(
      () => this.cluster.close(),
      () => this.cluster.destroy(),
    );
  }

  /** Connects, and keeps trying in the background while no root node answers. */
  private connect(): void {
    this.connected = this.cluster.connect().then(
      () => {
        this.slotsKnown = true;
      },
      (error: unknown) => {
        this.warn('redis cluster is not reachable yet; serving from the database', error);
        this.connected = undefined;
        if (!this.closed) setTimeout(() => this.connect(), 2000).unref();
      },
    );
  }

  /** The client counts as open from the start of `connect`, before it knows a single slot. */
  private async ready(): Promise<void> {
    if (this.slotsKnown) return;
    if (this.connected !== undefined) await this.connected;
    if (!this.slotsKnown) throw new Error('redis cluster is not connected');
  }
}

/**
 * A failure that a fresh slot map may cure: the node is gone or unreachable, or the cluster is
 * moving slots. Not a reply of a script or a command (`ERR …`, `WRONGTYPE …`): those repeat.
 */
function isTopologyError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (/^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN)\b/.test(error.message)) return true;
  return !/^[A-Z]+ /.test(error.message);
}
