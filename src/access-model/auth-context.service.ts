import { Injectable } from '@nestjs/common';
import { CacheAside, type CachedRead } from '../platform/cache/cache-aside.js';
import { cacheKeys } from '../platform/cache/cache-keys.js';
import { objectOf } from '../platform/cache/decode.js';
import { CacheEntries } from '../platform/cache/cache-entries.js';
import { ApiError } from '../platform/http/api-error.js';
import { Prefetched } from '../platform/projections/prefetched.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import {
  AccessFactsRepository,
  authVersionOf,
  type AuthUserRow,
  type UserVersions,
} from './access-facts.repository.js';
import type { AuthContext, GrantFacts, GroupFacts, Subject } from '../platform/auth/auth-context.js';
import { effectiveRole } from './group-rules.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import { USER_STATUS } from '../platform/auth/roles.js';
import { findSession, isSessionId, liveSessionsAfter, type SessionRow } from './sessions.repository.js';

interface CachedSession {
  readonly user_id: number;
  readonly expires_at: string;
  readonly revoked: boolean;
}

interface CachedAuthUser {
  readonly role_id: number;
  readonly status_id: number;
  readonly grants: readonly GrantFacts[];
  /** The groups the user belongs to (nested included): their roles make its effective role. */
  readonly groups: readonly GroupFacts[];
  /** The user's live authorities (at most `AUTH_CONTEXT_AUTHORITIES`), or null when it holds more. */
  readonly authorities: readonly AuthorityFacts[] | null;
}

const DECODE_SESSION = objectOf<CachedSession>({ user_id: 'number', expires_at: 'string', revoked: 'boolean' });
// An entry from before the authorities (or the groups) were carried lacks them: a miss, reloaded in the new shape.
const DECODE_USER = objectOf<CachedAuthUser>({
  role_id: 'number',
  status_id: 'number',
  grants: 'array',
  groups: 'array',
  authorities: 'array|null',
});

function sessionEntry(row: SessionRow): { version: number; deleted: boolean; json: string } {
  const projection: CachedSession = {
    user_id: row.user_id,
    expires_at: row.expires_at.toISOString(),
    revoked: row.revoked_at !== null,
  };
  return { version: row.version, deleted: false, json: JSON.stringify(projection) };
}

function authUserEntry(row: AuthUserRow): { version: number; deleted: boolean; json: string } {
  const projection: CachedAuthUser = {
    role_id: row.role_id,
    status_id: row.status_id,
    grants: row.grants,
    groups: row.groups,
    authorities: row.authorities,
  };
  return { version: Number(row.version), deleted: row.is_deleted, json: JSON.stringify(projection) };
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
  private readonly sessions: CacheAside<CachedSession, string>;
  private readonly users: CacheAside<CachedAuthUser>;

  constructor(
    private readonly cache: CacheEntries,
    private readonly uow: UnitOfWork,
    private readonly facts: AccessFactsRepository,
  ) {
    this.sessions = new CacheAside(
      cache,
      cacheKeys.session,
      async (id) => {
        const row = await findSession(uow.reader, id);
        return row === undefined ? undefined : sessionEntry(row);
      },
      DECODE_SESSION,
    );
    this.users = new CacheAside(cache, cacheKeys.authUser, (id) => this.loadUser(id), DECODE_USER);
  }

  async resolve(userId: number, sessionId: string): Promise<AuthContext> {
    return (await this.resolveWith(userId, sessionId, [])).context;
  }

  /**
   * As `resolve`, fetching `extra` cache keys (the route's detail projection) in the same round
   * trip; answers them for the handler (`Prefetched`), empty when the cache could not be asked.
   */
  async resolveWith(
    userId: number,
    sessionId: string,
    extra: readonly string[],
  ): Promise<{ context: AuthContext; prefetched: Prefetched | undefined }> {
    if (!isSessionId(sessionId)) throw sessionInvalid('unknown_session');
    // When the lookup was sent: a miss takes a load that began after it (a stampede of one session's
    // requests after its entry expired makes one load, as for every projection).
    const asked = performance.now();
    const lookup = await this.cache.getMany([this.sessions.key(sessionId), this.users.key(userId), ...extra]);
    const [session, user] = await Promise.all([
      this.sessions.settle(sessionId, { ok: lookup.ok, entry: lookup.entries[0] }, asked),
      this.users.settle(userId, { ok: lookup.ok, entry: lookup.entries[1] }, asked),
    ]);
    // Nothing to hand on when the route names no projection or the cache could not be asked.
    const prefetched =
      extra.length === 0 || !lookup.ok
        ? undefined
        : new Prefetched(new Map(extra.map((key, index) => [key, lookup.entries[index + 2]])));
    return { context: this.check(userId, sessionId, session, user), prefetched };
  }

  /**
   * The subject of `/authz/check`: any user's role, status and live grants, from the same cached
   * projection the session check reads; undefined for an unknown or deleted user.
   */
  async subjectOf(userId: number): Promise<Subject | undefined> {
    const read = await this.users.get(userId);
    if (read === undefined || read.entry.deleted) return undefined;
    const { role, group_id } = effectiveRole(read.value.role_id, read.value.groups, Date.now());
    if (role === undefined) return undefined;
    return {
      user_id: userId,
      role,
      role_group_id: group_id,
      groups: read.value.groups,
      active: read.value.status_id === USER_STATUS.active,
      grants: read.value.grants,
      authorities: read.value.authorities,
    };
  }

  /** After a commit that changed a user's role, status, deletion or permission grants. */
  async refreshUser(userId: number): Promise<void> {
    const entry = await this.loadUser(userId);
    if (entry !== undefined) await this.users.refresh(userId, entry);
  }

  /**
   * After a commit that changed the users' authorities or their authority permissions (which their
   * contexts carry): every entry rebuilt from one statement, written back in one pipelined burst.
   */
  async refreshUsers(userIds: readonly number[]): Promise<void> {
    const ids = [...new Set(userIds)];
    if (ids.length === 0) return;
    const rows = await this.facts.authUsers(ids);
    await this.users.refreshMany(rows.map((row) => [Number(row.id), authUserEntry(row)] as const));
  }

  /**
   * The users' context entries marked stale at these versions, as the write read them (their next
   * read loads them), for more users than a rebuild after the commit could do in time: inside the
   * write, after its projection bumps. False when a call did not land.
   */
  markStale(versions: ReadonlyMap<number, UserVersions>): Promise<boolean> {
    return this.users.invalidate(new Map([...versions].map(([id, parts]) => [id, authVersionOf(parts)])));
  }

  /**
   * A triggered rebuild: the contexts of every live session (its entry and its user's), in
   * pages; answers how many entries were written.
   */
  async warm(): Promise<number> {
    let written = 0;
    for (let after: string | null = null; ;) {
      const sessions = await liveSessionsAfter(this.uow.reader, after, 500);
      if (sessions.length === 0) return written;
      await this.refreshSessions(sessions);
      const users = await this.facts.authUsers([...new Set(sessions.map((session) => session.user_id))]);
      await Promise.all(users.map((row) => this.users.refresh(Number(row.id), authUserEntry(row))));
      written += sessions.length + users.length;
      after = sessions[sessions.length - 1]?.id ?? null;
    }
  }

  /** After a commit that created or revoked sessions. */
  async refreshSessions(rows: readonly SessionRow[]): Promise<void> {
    await Promise.all(rows.map((row) => this.sessions.refresh(row.id, sessionEntry(row))));
  }

  private check(
    userId: number,
    sessionId: string,
    session: CachedRead<CachedSession> | undefined,
    user: CachedRead<CachedAuthUser> | undefined,
  ): AuthContext {
    if (session === undefined) throw sessionInvalid('unknown_session');
    const state = session.value;
    if (state.user_id !== userId) throw sessionInvalid('unknown_session');
    if (state.revoked) throw sessionInvalid('session_revoked');
    if (Date.parse(state.expires_at) <= Date.now()) throw sessionInvalid('session_expired');
    if (user === undefined) throw sessionInvalid('unknown_user');
    if (user.entry.deleted) throw sessionInvalid('user_deleted');
    const account = user.value;
    if (account.status_id !== USER_STATUS.active) throw sessionInvalid('user_not_active');
    // The effective role now: a membership ends at its instant, with no write to rebuild the entry.
    const { role, group_id } = effectiveRole(account.role_id, account.groups, Date.now());
    if (role === undefined) throw sessionInvalid('unknown_role');
    return {
      user_id: userId,
      session_id: sessionId,
      role,
      role_group_id: group_id,
      groups: account.groups,
      active: true,
      grants: account.grants,
      authorities: account.authorities,
    };
  }

  private async loadUser(userId: number): Promise<ReturnType<typeof authUserEntry> | undefined> {
    const row = await this.facts.authUser(userId);
    return row === undefined ? undefined : authUserEntry(row);
  }
}
