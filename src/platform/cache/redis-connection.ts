import type { Logger } from '@nestjs/common';
import { isClusterUrl } from '../config/redis-url.js';
import { ClusterConnection } from './redis-cluster.js';
import type { RedisScript } from './redis-scripts.js';
import type { Identity } from './server-identity.js';
import { SingleConnection } from './redis-single.js';

/** Values as stored, and the stamp of the server that answered them (run id, replication id). */
export interface StampedValues {
  readonly values: readonly (string | null)[];
  readonly stamp: string;
}

/** What the store needs of Redis, one server or a cluster alike. */
export interface RedisConnection {
  /** A cluster: a script's keys must share one hash slot, and the scripts identify their server themselves. */
  readonly isCluster: boolean;
  /** Runs a script (by its SHA) on the node that holds its keys (all in one slot). */
  eval(script: RedisScript, keys: readonly string[], args?: readonly string[]): Promise<unknown>;
  /**
   * Plain MGET on one server (keys of any slot), with the server's stamp as they were read ('' on a
   * replica: nothing read there is trusted); a cluster refuses it.
   */
  mget(identity: Identity, keys: readonly string[]): Promise<StampedValues>;
  /** The server behind the current connection (stamp '' on a cluster: its scripts ask the server). */
  identity(): Identity | Promise<Identity>;
  /** Whether the connection `identity` was learned on is still the one in use (no reconnect since). */
  still(identity: Identity): boolean;
  /** The keys matching `pattern` on every master, in batches. */
  scan(pattern: string): AsyncIterable<string[]>;
  /** Answers when every master answers. */
  ping(): Promise<void>;
  /** A call failed or ran out of time: a cluster re-reads its slots (a failover may have moved them). */
  failed(): void;
  close(): Promise<void>;
}

export function connectRedis(url: string, logger: Logger): RedisConnection {
  return isClusterUrl(url) ? new ClusterConnection(url, logger) : new SingleConnection(url, logger);
}
