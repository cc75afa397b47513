import { Injectable } from '@nestjs/common';
import { CacheAside, type CachedRead } from '../cache/cache-aside.js';
import { cacheKeys } from '../cache/cache-keys.js';
import { CacheService } from '../cache/cache.service.js';
import { ApiError } from '../common/api-error.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { AuthContext } from './auth-context.js';
import { roleById, USER_STATUS } from './roles.js';
import { findSession, isSessionId, type SessionRow } from './sessions.js';

/** The user fields that decide authentication and authorization. */
export interface AuthUserRow {
  readonly id: number;
  readonly role_id: number;
  readonly status_id: number;
  readonly is_deleted: boolean;
  readonly version: number;
}

interface CachedSession {
  readonly user_id: number;
  readonly expires_at: string;
  readonly revoked: boolean;
}

interface CachedAuthUser {
  readonly role_id: number;
  readonly status_id: number;
}

function sessionEntry(row: SessionRow): { version: number; deleted: boolean; json: string } {
  const projection: CachedSession = { user_id: row.user_id, expires_at: row.expires_at.toISOString(), revoked: row.revoked_at !== null };
  return { version: row.version, deleted: false, json: JSON.stringify(projection) };
}

function authUserEntry(row: AuthUserRow): { version: number; deleted: boolean; json: string } {
  const projection: CachedAuthUser = { role_id: row.role_id, status_id: row.status_id };
  return { version: row.version, deleted: row.is_deleted, json: JSON.stringify(projection) };
}

function sessionInvalid(reason: string): ApiError {
  return new ApiError('AUTH_SESSION_INVALID', 'The session is not valid; sign in again', { reason });
}

/**
 * The session check of part 4 on every request, through a cached auth context. The context is
 * two cache entries read in one round trip: the session (owner, expiry, revocation) and the
 * user (role, status, deletion). Every write that changes either rebuilds its entry after
 * commit, so a revoked session or a suspended, deleted or re-roled user takes effect on the
 * very next request on every instance sharing the cache.
 */
@Injectable()
export class AuthContextService {
  private readonly sessions: CacheAside<string>;
  private readonly users: CacheAside;

  constructor(
    private readonly cache: CacheService,
    uow: UnitOfWork,
  ) {
    this.sessions = new CacheAside(cache, cacheKeys.session, async (id) => {
      const row = await findSession(uow.reader, id);
      return row === undefined ? undefined : sessionEntry(row);
    });
    this.users = new CacheAside(cache, cacheKeys.authUser, async (id) => {
      const [row] = await uow.reader.query<AuthUserRow[]>('SELECT id, role_id, status_id, is_deleted, version FROM users WHERE id = $1', [id]);
      return row === undefined ? undefined : authUserEntry(row);
    });
  }

  async resolve(userId: number, sessionId: string): Promise<AuthContext> {
    if (!isSessionId(sessionId)) throw sessionInvalid('unknown_session');
    const lookup = await this.cache.getMany([this.sessions.key(sessionId), this.users.key(userId)]);
    const [session, user] = await Promise.all([
      this.sessions.settle(sessionId, { ok: lookup.ok, entry: lookup.entries[0] }),
      this.users.settle(userId, { ok: lookup.ok, entry: lookup.entries[1] }),
    ]);
    return this.check(userId, sessionId, session, user);
  }

  /** After a commit that changed a user's role, status or deletion. */
  async refreshUser(row: AuthUserRow): Promise<void> {
    await this.users.refresh(row.id, authUserEntry(row));
  }

  /** After a commit that created or revoked sessions. */
  async refreshSessions(rows: readonly SessionRow[]): Promise<void> {
    await Promise.all(rows.map((row) => this.sessions.refresh(row.id, sessionEntry(row))));
  }

  private check(userId: number, sessionId: string, session: CachedRead | undefined, user: CachedRead | undefined): AuthContext {
    if (session === undefined) throw sessionInvalid('unknown_session');
    const state = JSON.parse(session.entry.json) as CachedSession;
    if (state.user_id !== userId) throw sessionInvalid('unknown_session');
    if (state.revoked) throw sessionInvalid('session_revoked');
    if (Date.parse(state.expires_at) <= Date.now()) throw sessionInvalid('session_expired');
    if (user === undefined) throw sessionInvalid('unknown_user');
    if (user.entry.deleted) throw sessionInvalid('user_deleted');
    const account = JSON.parse(user.entry.json) as CachedAuthUser;
    if (account.status_id !== USER_STATUS.active) throw sessionInvalid('user_not_active');
    const role = roleById(account.role_id);
    if (role === undefined) throw sessionInvalid('unknown_role');
    return { user_id: userId, session_id: sessionId, role };
  }
}
