import { actor, permissionId, type Caller } from './auth.js';
import { sql } from './db.js';
import { createAuthority, createDevice } from './devices.js';

/** A device with its owner, and an operator related to it (an authority holding `permissions`). */
export interface AccessWorld {
  readonly device: number;
  readonly owner: Caller;
  readonly operator: Caller;
  readonly authority: number;
  readonly ownerAuthority: number;
}

export async function accessWorld(permissions: string[] = []): Promise<AccessWorld> {
  const owner = await actor('operator');
  const operator = await actor('operator');
  const device = (await createDevice({ ownerId: owner.user.id })).id;
  const authority = await createAuthority(device, operator.user.id, { permissions });
  const [ownerAuthority] = await sql<{ id: number }>('SELECT id FROM authorities WHERE device_id = $1 AND owner', [
    device,
  ]);
  return { device, owner, operator, authority, ownerAuthority: Number(ownerAuthority?.id) };
}

/** A body asking for `code` on the world's device. */
export function askFor(world: Pick<AccessWorld, 'device'>, code: string, extra: object = {}): object {
  return {
    device_id: world.device,
    permission_id: permissionId(code),
    reason: 'Night shift: revoke a lost badge',
    duration_seconds: 3600,
    ...extra,
  };
}

/**
 * The rows a refused write must leave alone, among those of the users and devices a spec made
 * (other specs write the same tables at the same time).
 */
export async function counts(
  userIds: readonly number[],
  deviceIds: readonly number[],
): Promise<Record<string, number>> {
  const [row] = await sql<Record<string, string>>(
    `SELECT (SELECT count(*) FROM access_requests WHERE requester_id = ANY($1::bigint[])) AS access_requests,
            (SELECT count(*) FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id
              WHERE a.device_id = ANY($2::bigint[])) AS authority_permissions,
            (SELECT count(*) FROM inbox_messages WHERE user_id = ANY($1::bigint[])) AS inbox_messages,
            (SELECT count(*) FROM audit_events WHERE actor_id = ANY($1::bigint[])) AS audit_events`,
    [userIds, deviceIds],
  );
  return Object.fromEntries(Object.entries(row ?? {}).map(([key, value]) => [key, Number(value)]));
}

/** The users and device of a world, for `counts`. */
export function worldCounts(
  world: AccessWorld,
  ...others: { user: { id: number } }[]
): Promise<Record<string, number>> {
  return counts(
    [world.owner, world.operator, ...others].map((who) => who.user.id),
    [world.device],
  );
}

/** The inbox messages of type access_request a user got about one request. */
export function noticesOf(userId: number, requestId: number): Promise<{ id: number; title: string; data: object }[]> {
  return sql(
    `SELECT id, title, data FROM inbox_messages
     WHERE user_id = $1 AND type = 'access_request' AND data->>'access_request_id' = $2 ORDER BY id`,
    [userId, String(requestId)],
  );
}

/** The audit actions recorded on one request, oldest first, and the feed's event types for it. */
export async function trailOf(requestId: number): Promise<{ audit: string[]; feed: string[] }> {
  const audit = await sql<{ action: string }>(
    "SELECT action FROM audit_events WHERE resource_type = 'access_request' AND resource_id = $1 ORDER BY id",
    [String(requestId)],
  );
  const feed = await sql<{ type: string }>(
    "SELECT type FROM events WHERE resource_type = 'access_request' AND resource_id = $1 ORDER BY id",
    [String(requestId)],
  );
  return { audit: audit.map((row) => row.action), feed: feed.map((row) => row.type) };
}
