import type { EntityManager } from 'typeorm';
import { toAuditEvents, type AuditRecord } from '../platform/audit/audit.service.js';
import { appendAccessEvents, appendAuditEvents } from '../platform/audit/audit-trail.repository.js';
import { textOf } from '../platform/database/prepared.js';
import { accessDifference, accessEntries, type AccessEntry } from '../access-model/access-changes.js';
import { AccessSnapshotRepository } from '../access-model/access-snapshot.repository.js';
import { withJwtSecret } from '../platform/auth/jwt-secret.js';
import { ROLE, USER_STATUS } from '../platform/auth/roles.js';
import {
  DEFAULT_SESSION_TTL_SECONDS,
  insertSession,
  sessionOnFeed,
  type SessionRow,
} from '../access-model/sessions.repository.js';
import { signAccessToken } from '../platform/auth/token-signer.js';
import type { Settings } from '../platform/config/settings.js';
import { userResource } from '../users/users.repository.js';
import { CliError, say } from './command.js';
import { ServerCaches, withDatabase } from './database.js';
import type { BootstrapOptions, SessionOptions } from './token-commands.js';

/* The token commands' database work; token-commands.ts declares them and imports this in their run. */

/**
 * The CLI's writes are audited like the API's, with no actor and no request; `resource` is the
 * record as the API shows it after the write, the feed event's `data` (part 6.12).
 */
function recordAudit(db: EntityManager, event: AuditRecord, resource: object): Promise<void> {
  return appendAuditEvents(
    (statement, params) => db.query(textOf(statement), [...params]),
    { actor_id: null, request_id: null },
    toAuditEvents([event]).map((audited) => ({ ...audited, resource })),
  );
}

/**
 * Runs `write` (which changes the user's role or standing) and announces what it changed in the
 * user's access (`access.gained` / `access.lost`, part 6.17), as the API's writes do; the cause is
 * the write's own event, written in the same transaction.
 */
async function announcingAccess<T>(
  db: EntityManager,
  userId: () => number | undefined,
  write: () => Promise<T>,
): Promise<T> {
  const snapshots = new AccessSnapshotRepository();
  const at = Date.now();
  const access = async (id: number | undefined): Promise<AccessEntry[]> => {
    if (id === undefined) return [];
    const subjects = await snapshots.subjects(db, [id]);
    return accessEntries(subjects, await snapshots.authorities(db, { users: [id] }, subjects), at);
  };
  const before = await access(userId());
  const result = await write();
  await appendAccessEvents(
    (statement, params) => db.query(textOf(statement), [...params]),
    { actor_id: null, request_id: null },
    accessDifference(before, await access(userId())),
    'write',
  );
  return result;
}

interface UserState {
  readonly id: number;
  readonly email: string;
  readonly role_id: number;
  readonly status_id: number;
  readonly is_deleted: boolean;
}

async function openSession(db: EntityManager, userId: number, ttlSeconds: number, via: string): Promise<SessionRow> {
  const session = await insertSession(db, userId, ttlSeconds, null);
  await recordAudit(
    db,
    {
      action: 'session.create',
      resource_id: session.id,
      reason: via,
      changes: { user_id: [null, userId], expires_at: [null, session.expires_at.toISOString()] },
    },
    sessionOnFeed(session),
  );
  return session;
}

/** Finds or creates the account and makes it an active super_admin; one transaction with its audit events. */
async function ensureSuperAdmin(
  db: EntityManager,
  email: string,
  displayName: string | undefined,
): Promise<{ user: UserState; created: boolean }> {
  const [existing] = await db.query<UserState[]>(
    'SELECT id, email, role_id, status_id, is_deleted FROM users WHERE lower(email) = lower($1) FOR UPDATE',
    [email],
  );
  if (existing === undefined) {
    let created: number | undefined;
    return announcingAccess(
      db,
      () => created,
      async () => {
        const [user] = await db.query<UserState[]>(
          'INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, $2, $3, $4) RETURNING id, email, role_id, status_id, is_deleted',
          [email, displayName ?? email.split('@')[0] ?? email, ROLE.super_admin, USER_STATUS.active],
        );
        if (user === undefined) throw new Error('user insert returned no row');
        created = user.id;
        await recordAudit(
          db,
          {
            action: 'user.create',
            resource_id: user.id,
            reason: 'cli bootstrap-admin',
            changes: { email: [null, email], role_id: [null, ROLE.super_admin], status_id: [null, USER_STATUS.active] },
          },
          await userResource(db, user.id),
        );
        return { user, created: true };
      },
    );
  }
  if (existing.is_deleted)
    throw new CliError(
      `user ${existing.id} (${existing.email}) is deleted; restore it through the API or choose another email`,
    );
  if (existing.role_id !== ROLE.super_admin || existing.status_id !== USER_STATUS.active)
    await announcingAccess(
      db,
      () => existing.id,
      async () => {
        await db.query('UPDATE users SET role_id = $2, status_id = $3, updated_by = NULL WHERE id = $1', [
          existing.id,
          ROLE.super_admin,
          USER_STATUS.active,
        ]);
        await recordAudit(
          db,
          {
            action: 'user.update',
            resource_id: existing.id,
            reason: 'cli bootstrap-admin',
            changes: {
              role_id: [existing.role_id, ROLE.super_admin],
              status_id: [existing.status_id, USER_STATUS.active],
            },
          },
          await userResource(db, existing.id),
        );
      },
    );
  return { user: existing, created: false };
}

/** The user a session is opened for must exist, not be deleted, and be active (else the session check refuses it). */
async function activeUser(db: EntityManager, userId: number): Promise<UserState> {
  const [user] = await db.query<UserState[]>(
    'SELECT id, email, role_id, status_id, is_deleted FROM users WHERE id = $1',
    [userId],
  );
  if (user === undefined || user.is_deleted) throw new CliError(`user ${userId} does not exist`);
  if (user.status_id !== USER_STATUS.active)
    throw new CliError(`user ${userId} is not active (status ${user.status_id}); activate it first`);
  return user;
}

function requireSecretMode(settings: Settings, command: string): void {
  if (settings.jwtSecret === undefined) {
    throw new CliError(
      `${command} prints a token, which needs secret mode (JWT_SECRET); with JWT_JWKS_URL your identity provider signs tokens: use create-session for their sid`,
    );
  }
}

/** A new session for the active user named by `--user-id`, one transaction with its audit event. */
async function sessionOfActiveUser(
  settings: Settings,
  databaseUrl: string,
  { userId, ttl }: SessionOptions,
  via: string,
): Promise<SessionRow> {
  const caches = new ServerCaches(settings, databaseUrl, ['auth_sessions', 'audit_events']);
  const session = await withDatabase(settings, databaseUrl, (dataSource) =>
    dataSource.transaction(async (db) => {
      await activeUser(db, userId);
      await caches.inTransaction(db);
      return openSession(db, userId, ttl, via);
    }),
  );
  await caches.afterCommit();
  return session;
}

export async function bootstrapAdmin(
  loaded: Settings,
  databaseUrl: string,
  { email, displayName }: BootstrapOptions,
): Promise<number> {
  const settings = await withJwtSecret(loaded);
  requireSecretMode(settings, 'bootstrap-admin');
  const { user, created, session, caches } = await withDatabase(settings, databaseUrl, (dataSource) =>
    dataSource.transaction(async (db) => {
      const account = await ensureSuperAdmin(db, email, displayName);
      // A reused account may be cached with its old role or status: drop everything. A new one only adds rows.
      const written = account.created ? ['users', 'auth_sessions', 'audit_events'] : undefined;
      const serverCaches = new ServerCaches(settings, databaseUrl, written);
      await serverCaches.inTransaction(db);
      return {
        ...account,
        caches: serverCaches,
        session: await openSession(db, account.user.id, DEFAULT_SESSION_TTL_SECONDS, 'cli bootstrap-admin'),
      };
    }),
  );
  await caches.afterCommit();
  say(
    `${created ? 'created' : 'reusing'} super_admin user ${user.id} (${user.email}); session ${session.id} valid until ${session.expires_at.toISOString()}`,
  );
  process.stdout.write(`${signAccessToken(settings, session)}\n`);
  return 0;
}

export async function issueToken(loaded: Settings, databaseUrl: string, options: SessionOptions): Promise<number> {
  const settings = await withJwtSecret(loaded);
  requireSecretMode(settings, 'issue-token');
  const session = await sessionOfActiveUser(settings, databaseUrl, options, 'cli issue-token');
  say(`session ${session.id} for user ${options.userId} valid until ${session.expires_at.toISOString()}`);
  process.stdout.write(`${signAccessToken(settings, session)}\n`);
  return 0;
}

export async function createSession(settings: Settings, databaseUrl: string, options: SessionOptions): Promise<number> {
  const session = await sessionOfActiveUser(settings, databaseUrl, options, 'cli create-session');
  say(
    `session for user ${options.userId} valid until ${session.expires_at.toISOString()}; put it in the token's sid claim with sub "${options.userId}"`,
  );
  process.stdout.write(`${session.id}\n`);
  return 0;
}
