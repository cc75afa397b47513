import jwt from 'jsonwebtoken';
import { createSecretKey, randomUUID } from 'node:crypto';
import { PERMISSIONS } from '../../src/platform/auth/permissions.js';
import { ROLE, USER_STATUS, type RoleCode, type UserStatusCode } from '../../src/platform/auth/roles.js';
import { sql } from './db.js';
import { TEST_JWT_SECRET } from './test-env.js';

export interface TestUser {
  readonly id: number;
  readonly email: string;
  readonly role_id: number;
  readonly status_id: number;
}

/** Inserts a user straight into the database (specs create their own, uniquely named, data). */
export async function createUser(
  options: { role?: RoleCode; status?: UserStatusCode; email?: string; displayName?: string } = {},
): Promise<TestUser> {
  const email = options.email ?? `${options.role ?? 'viewer'}-${randomUUID().slice(0, 12)}@example.com`;
  const [user] = await sql<TestUser>(
    'INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, $2, $3, $4) RETURNING id, email, role_id, status_id',
    [
      email,
      options.displayName ?? `Test ${options.role ?? 'viewer'}`,
      ROLE[options.role ?? 'viewer'],
      USER_STATUS[options.status ?? 'active'],
    ],
  );
  if (user === undefined) throw new Error('user insert returned no row');
  return user;
}

export async function createSession(userId: number, ttlSeconds = 3600): Promise<string> {
  const [row] = await sql<{ id: string }>(
    'INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + make_interval(secs => $2)) RETURNING id',
    [userId, ttlSeconds],
  );
  if (row === undefined) throw new Error('session insert returned no row');
  return row.id;
}

const KEY = createSecretKey(Buffer.from(TEST_JWT_SECRET, 'utf8'));

/**
 * Signs claims as the test apps expect them (HS256, default issuer and audience, one hour)
 * unless overridden; `{ expiresIn: undefined }` or an explicit `exp` claim drops the default expiry.
 */
export function signToken(
  claims: Record<string, unknown>,
  options: jwt.SignOptions = {},
  key: jwt.Secret = KEY,
): string {
  const expiry = claims.exp === undefined && !('expiresIn' in options) ? { expiresIn: 3600 } : {};
  const chosen = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  return jwt.sign(claims, key, {
    algorithm: 'HS256',
    issuer: 'admin-api',
    audience: 'admin-portal',
    ...expiry,
    ...chosen,
  });
}

/** A token for a new session of the user. */
export async function tokenFor(user: { id: number }): Promise<string> {
  return signToken({ sub: String(user.id), sid: await createSession(user.id) });
}

/** Someone calling the API: a user and its bearer token. */
export interface Caller {
  readonly user: TestUser;
  readonly token: string;
  readonly auth: string;
}

/** A user of the role with a working token. */
export async function actor(role: RoleCode = 'super_admin'): Promise<Caller> {
  const user = await createUser({ role });
  const token = await tokenFor(user);
  return { user, token, auth: `Bearer ${token}` };
}

/** The catalogue id of a permission code. */
export const permissionId = (code: string): number =>
  PERMISSIONS.find((permission) => permission.code === code)?.id ?? 0;
