import { createClient } from '@keyv/redis';
import type { OwnRedis } from './redis-server.js';

export const portOf = (redis: OwnRedis): number => Number(new URL(redis.url).port);

/** One command to a server of this test's, on a connection of its own (no reconnects: a dead server fails it). */
export async function command(redis: OwnRedis, ...args: string[]): Promise<string> {
  const client = createClient({ url: redis.url, socket: { reconnectStrategy: false } });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const reply: unknown = await client.sendCommand(args);
    return typeof reply === 'string' || typeof reply === 'number' ? String(reply) : JSON.stringify(reply);
  } finally {
    await client.close();
  }
}

/**
 * Resolves once `count` replicas have acknowledged everything the master holds: a gate Redis
 * keeps itself. WAIT counts only this connection's own writes, so it writes one first.
 */
export async function replicated(master: OwnRedis, count = 1): Promise<void> {
  const client = createClient({ url: master.url, socket: { reconnectStrategy: false } });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.set('replication-probe', String(Date.now()));
    await client.sendCommand(['WAIT', String(count), '0']);
  } finally {
    await client.close();
  }
}

/** A field of an INFO answer (`name:value`). */
export const field = (info: string, name: string): string | undefined =>
  new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();

/** The stamp a generation written by `redis` carries: its run id, then its replication id. */
export async function stampOf(redis: OwnRedis): Promise<string> {
  const info = await command(redis, 'INFO', 'server', 'replication');
  return `${field(info, 'run_id') ?? ''}${field(info, 'master_replid') ?? ''}`;
}

/**
 * Makes `replica` a replica of `master` (reached at `port`: a proxy's, to cut the link), synced at
 * once (not after the default 5 s of waiting for more replicas) and through memory only: a sync
 * through disk would leave a dump.rdb in the working directory.
 */
export async function follow(replica: OwnRedis, master: OwnRedis, port = portOf(master)): Promise<void> {
  await command(master, 'CONFIG', 'SET', 'repl-diskless-sync', 'yes', 'repl-diskless-sync-delay', '0');
  await command(replica, 'CONFIG', 'SET', 'repl-diskless-load', 'on-empty-db');
  await command(replica, 'REPLICAOF', '127.0.0.1', String(port));
}
