import type { FastifyRequest } from 'fastify';
import { isPathId } from '../common/id.pipe.js';

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
  /** Requests of one actor in the current window. */
  actorRequests: (userId: number): string => `actor-requests:${userId}`,
  /** Failed authentications of one client address in the current window. */
  authFailures: (ip: string): string => `auth-failures:${ip}`,
} as const;

/** `@Authorize({ prefetch: detailOf('user') })`: the detail projection named by the path's `:id`. */
export function detailOf(type: string, param = 'id'): (request: FastifyRequest) => string | undefined {
  return (request) => {
    const id = (request.params as Record<string, string | undefined>)[param];
    return isPathId(id) ? cacheKeys.resource(type, id) : undefined;
  };
}
