import type { FastifyRequest } from 'fastify';
import { isPathId } from '../http/id.pipe.js';

/** Every cache key of the service is built here, so invalidations and reads cannot drift apart. */
export const cacheKeys = {
  /** The key prefixes of each kind of projection, for a triggered rebuild that drops one kind. */
  prefixes: { details: 'res:', auth: 'auth:', devices: 'authz:device:', readCounts: 'read-counts:' },
  /** Detail projection of one record, e.g. `resource('user', 42)`. */
  resource: (type: string, id: number | string): string => `res:${type}:${id}`,
  /** The session half of the auth context: owner, expiry, revocation. */
  session: (sessionId: string): string => `auth:session:${sessionId}`,
  /** The user half of the auth context: role, status, deletion (and, later, effective grants). */
  authUser: (userId: number): string => `auth:user:${userId}`,
  /** A device's live authority set, read by the device-scoped authorization layer. */
  deviceAuthorities: (deviceId: number): string => `authz:device:${deviceId}`,
  /** A user's read-state counts, overall (`<user>:*`) or for one conversation (`<user>:<conversation>`). */
  readCounts: (scope: string): string => `read-counts:${scope}`,
  /** One cached list page: the digest of its resource, normalised query and row scope. */
  listPage: (digest: string): string => `list:${digest}`,
  /** The generation of a table's list pages, bumped after every commit that wrote the table. */
  tableGeneration: (table: string): string => `table:${table}`,
  /**
   * Moved by every flush of the whole cache (`flushAll`), beside the shards' generations, and kept
   * with the table generations: what is remembered outside the store under table generations (a
   * list's total, `ListTotals`) counts only while this one is unchanged too. Not a table name.
   */
  flushGeneration: 'flushes',
  /** Requests of one actor in the current window. */
  actorRequests: (userId: number): string => `actor-requests:${userId}`,
  /** Failed authentications of one client address in the current window. */
  authFailures: (ip: string): string => `auth-failures:${ip}`,
} as const;

/**
 * Entries are spread over this many shards, each with its own cache generation. A Lua script
 * touches one shard only, so on Redis Cluster every script's keys share a hash slot (the shard's
 * hash tag); the shards spread the entries and the generation reads over the masters.
 */
export const CACHE_SHARDS = 128;

/** The shard of a logical key (FNV-1a): stable across instances and restarts. */
export function shardOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index += 1) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % CACHE_SHARDS;
}

/**
 * The keys as stored in Redis under the store's prefix. The part in braces is the hash tag: Redis
 * Cluster puts keys with the same tag in one slot, which is what lets one script read a shard's
 * generation and its entries together. The prefix itself never holds a brace (CACHE_KEY_PREFIX).
 */
export const storedKeys = {
  /** A shard's cache generation (`<n>@<stamp>`: run id, replication id); its entries count only while stored under it. */
  shardGeneration: (prefix: string, shard: number): string => `${prefix}{s${shard}}:generation`,
  /** What the stored keys of a shard's entries start with; the logical key follows. */
  shardHead: (prefix: string, shard: number): string => `${prefix}{s${shard}}:e:`,
  /** The stored key of a logical entry key: `<generation>:<entry>` is its value. */
  entry: (prefix: string, key: string): string => `${prefix}{s${shardOf(key)}}:e:${key}`,
  /** A table generation: all of them share one slot, so one script reads or bumps several at once. */
  tableGeneration: (prefix: string, name: string): string => `${prefix}{t}:gen:${name}`,
  /** A rate-limit counter (one key, any slot); outside every generation. */
  counter: (prefix: string, key: string): string => `${prefix}count:${key}`,
} as const;

/** `@Authorize({ prefetch: detailOf('user') })`: the detail projection named by the path's `:id`. */
export function detailOf(type: string, param = 'id'): (request: FastifyRequest) => string | undefined {
  return (request) => {
    const id = (request.params as Record<string, string | undefined>)[param];
    return isPathId(id) ? cacheKeys.resource(type, id) : undefined;
  };
}
