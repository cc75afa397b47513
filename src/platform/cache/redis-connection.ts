import { createClient, createCluster } from '@keyv/redis';
import type { Logger } from '@nestjs/common';
import { isClusterUrl, parseClusterUrl } from '../config/redis-url.js';

type Client = ReturnType<typeof createClient>;
type Cluster = ReturnType<typeof createCluster>;

/** What the store needs of Redis, one server or a cluster alike. */
export interface RedisConnection {
  /** A cluster: a script's keys must share one hash slot. */
  readonly isCluster: boolean;
  /** Runs a script on the node that holds its keys (all in one slot). */
  eval(script: string, keys: readonly string[], args?: readonly string[]): Promise<unknown>;
  /** The keys matching `pattern` on every master, in batches. */
  scan(pattern: string): AsyncIterable<string[]>;
  /** Answers when every master answers. */
  ping(): Promise<void>;
  /** A call failed or ran out of time: a cluster re-reads its slots (a failover may have moved them). */
  failed(): void;
  close(): Promise<void>;
}

/** One line every 10 s at most: a dead node's reconnect attempts repeat the same error many times a second. */
function throttledWarn(logger: Logger): (msg: string, error: unknown) => void {
  let last = 0;
  return (msg, error) => {
    if (Date.now() - last < 10_000) return;
    last = Date.now();
    logger.warn({ msg, err: error instanceof Error ? error.message : String(error) });
  };
}

// Commands fail at once while a node is disconnected instead of queueing without bound.
const SOCKET = { connectTimeout: 1000, reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2000) };

/** One Redis server through the client of `@keyv/redis`. */
class SingleConnection implements RedisConnection {
  readonly isCluster = false;
  private readonly client: Client;
  /** The first connection, awaited by calls made before it is up (within their budget); later outages fail at once. */
  private connecting: Promise<void> | undefined;

  constructor(url: string, logger: Logger) {
    const warn = throttledWarn(logger);
    this.client = createClient({ url, disableOfflineQueue: true, socket: SOCKET });
    this.client.on('error', (error: unknown) => warn('redis connection error', error));
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

  async eval(script: string, keys: readonly string[], args: readonly string[] = []): Promise<unknown> {
    if (this.connecting !== undefined) await this.connecting;
    return this.client.eval(script, { keys: [...keys], arguments: [...args] });
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

/**
 * A Redis Cluster through the node-redis cluster client. The client re-reads the slot map only on
 * a MOVED or ASK reply, never because a node went away: after a master dies its slots would keep
 * failing until something else moved. So a call that fails for want of a node re-reads the slots
 * and tries once more, and every failed call (a timeout too) asks for a re-read: while the cluster
 * promotes a replica the calls fail fast (the service bypasses the cache), and the first re-read
 * after the promotion sends them to the new master.
 */
class ClusterConnection implements RedisConnection {
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

  async eval(script: string, keys: readonly string[], args: readonly string[] = []): Promise<unknown> {
    await this.ready();
    const call = () => this.cluster.eval(script, { keys: [...keys], arguments: [...args] });
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

async function closeWithin(close: () => Promise<unknown>, destroy: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), 500)));
  const outcome = await Promise.race([close().then(() => 'closed' as const), gaveUp]).catch(() => 'failed' as const);
  clearTimeout(timer);
  if (outcome !== 'closed') destroy();
}

export function connectRedis(url: string, logger: Logger): RedisConnection {
  return isClusterUrl(url) ? new ClusterConnection(url, logger) : new SingleConnection(url, logger);
}
