import type { EntityManager } from 'typeorm';
import { listSpec } from '../platform/http/list/list-spec.js';
import type { Tx } from '../platform/database/unit-of-work.js';
import { table } from '../platform/database/table.js';

const AUTH_SESSIONS = table('auth_sessions');

/** The columns of `auth_sessions` the session check needs, and those the feed shows. */
export interface SessionRow {
  readonly id: string;
  readonly user_id: number;
  readonly created_at: Date;
  readonly expires_at: Date;
  readonly revoked_at: Date | null;
  readonly revoked_by: number | null;
  readonly revoke_reason: string | null;
  readonly version: number;
}

const SESSION_COLUMNS = 'id, user_id, created_at, expires_at, revoked_at, revoked_by, revoke_reason, version';

/**
 * A session as the event feed's `data` shows it after a write (part 6.12): as the sessions list
 * does (`SESSION_LIST`), whether the server or the CLI wrote it.
 */
export function sessionOnFeed(row: SessionRow): Omit<SessionRow, 'version'> & { readonly is_active: boolean } {
  return {
    id: row.id,
    user_id: row.user_id,
    created_at: row.created_at,
    expires_at: row.expires_at,
    revoked_at: row.revoked_at,
    revoked_by: row.revoked_by,
    revoke_reason: row.revoke_reason,
    is_active: row.revoked_at === null && row.expires_at > new Date(),
  };
}

export const DEFAULT_SESSION_TTL_SECONDS = 12 * 3600;

export async function findSession(db: EntityManager, sessionId: string): Promise<SessionRow | undefined> {
  const [row] = await db.query<SessionRow[]>(`SELECT ${SESSION_COLUMNS} FROM auth_sessions WHERE id = $1`, [sessionId]);
  return row;
}

export async function insertSession(
  db: EntityManager,
  userId: number,
  ttlSeconds: number,
  actorId: number | null,
): Promise<SessionRow> {
  const [row] = await db.query<SessionRow[]>(
    `INSERT INTO auth_sessions (user_id, expires_at, created_by, updated_by)
     VALUES ($1, now() + make_interval(secs => $2), $3, $3) RETURNING ${SESSION_COLUMNS}`,
    [userId, ttlSeconds, actorId],
  );
  if (row === undefined) throw new Error('session insert returned no row');
  return row;
}

/** Revokes every live session of a user (suspension, deletion); returns the rows it changed. */
export async function revokeSessionsOfUser(
  tx: Tx,
  userId: number,
  reason: string,
  actorId: number | null,
): Promise<SessionRow[]> {
  const [rows] = await tx.write<[SessionRow[], number]>(
    AUTH_SESSIONS,
    `UPDATE auth_sessions SET revoked_at = now(), revoked_by = $2, revoke_reason = $3, updated_by = $2
     WHERE user_id = $1 AND revoked_at IS NULL RETURNING ${SESSION_COLUMNS}`,
    [userId, actorId, reason],
  );
  return rows;
}

/** A page of the live (unrevoked, unexpired) sessions in id order, after `afterId` (a triggered rebuild). */
export async function liveSessionsAfter(
  db: EntityManager,
  afterId: string | null,
  limit: number,
): Promise<SessionRow[]> {
  return db.query<SessionRow[]>(
    `SELECT ${SESSION_COLUMNS} FROM auth_sessions
     WHERE revoked_at IS NULL AND expires_at > now() AND ($1::uuid IS NULL OR id > $1::uuid)
     ORDER BY id LIMIT $2`,
    [afterId, limit],
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isSessionId(value: string): boolean {
  return UUID.test(value);
}

/** `GET /users/{id}/sessions` (part 6.1): never a token, newest first. */
export const SESSION_LIST = listSpec({
  from: 'auth_sessions',
  select: `id, user_id, created_at, expires_at, revoked_at, revoked_by, revoke_reason, (revoked_at IS NULL AND expires_at > now()) AS is_active`,
  sort: ['created_at', 'expires_at'],
  // `is_active` is judged at now(): a page is good until the next session expires.
  changesAt: 'expires_at',
  defaultSort: 'created_at:desc',
});
