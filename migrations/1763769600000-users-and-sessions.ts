import type { MigrationInterface, QueryRunner } from 'typeorm';
import {
  BASE_RECORD_COLUMNS_V1 as BASE_RECORD_COLUMNS,
  SOFT_DELETE_COLUMNS_V1 as SOFT_DELETE_COLUMNS,
} from './record-columns-v1.js';

// Frozen copies of the catalogue at the time of this migration (src/auth/permissions.ts and
// roles.ts are the live definitions; a test checks that the seeded rows match them).
const ROLES: readonly (readonly [number, string, boolean])[] = [
  [1, 'super_admin', true],
  [2, 'admin', true],
  [3, 'operator', true],
  [4, 'viewer', true],
  [5, 'member', false],
];
const STATUSES: readonly (readonly [number, string])[] = [
  [1, 'pending'],
  [2, 'active'],
  [3, 'suspended'],
];
const PERMISSIONS = [
  'users.read',
  'users.create',
  'users.update',
  'users.delete',
  'users.restore',
  'users.activate',
  'users.suspend',
  'users.reset_pin',
  'devices.read',
  'devices.create',
  'devices.update',
  'devices.transfer_owner',
  'authorities.read',
  'authorities.create',
  'authorities.update',
  'authorities.delete',
  'authorities.restore',
  'authorities.activate',
  'authorities.deactivate',
  'authorities.revoke',
  'authority_permissions.read',
  'authority_permissions.grant',
  'authority_permissions.revoke',
  'permission_grants.read',
  'permission_grants.grant',
  'permission_grants.revoke',
  'inbox.read',
  'inbox.create',
  'inbox.update',
  'inbox.delete',
  'inbox.restore',
  'inbox.send_push',
  'read_state.read',
  'read_state.update',
  'mobile_devices.read',
  'mobile_devices.create',
  'mobile_devices.deactivate',
  'mobile_devices.refresh_token',
  'audit.read',
  'jobs.read',
];

/** Roles, statuses, the permission catalogue, users and their sessions (parts 4, 5 and 6.1). */
export class UsersAndSessions1763769600000 implements MigrationInterface {
  name = 'UsersAndSessions1763769600000';

  async up(db: QueryRunner): Promise<void> {
    // Trigram indexes serve `q` (case-insensitive substring search) on large tables.
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    await db.query(
      'CREATE TABLE roles (id integer PRIMARY KEY, code text NOT NULL UNIQUE, admin_access boolean NOT NULL)',
    );
    for (const [id, code, admin] of ROLES)
      await db.query('INSERT INTO roles (id, code, admin_access) VALUES ($1, $2, $3)', [id, code, admin]);
    await db.query('CREATE TABLE user_statuses (id integer PRIMARY KEY, code text NOT NULL UNIQUE)');
    for (const [id, code] of STATUSES)
      await db.query('INSERT INTO user_statuses (id, code) VALUES ($1, $2)', [id, code]);
    await db.query(`
      CREATE TABLE permissions (
        id integer PRIMARY KEY,
        code text NOT NULL UNIQUE,
        device_scoped boolean NOT NULL
      )`);
    for (const [index, code] of PERMISSIONS.entries()) {
      await db.query('INSERT INTO permissions (id, code, device_scoped) VALUES ($1, $2, $3)', [
        index + 1,
        code,
        /^(devices|authorities|authority_permissions)\./.test(code),
      ]);
    }

    await db.query(`
      CREATE TABLE users (${BASE_RECORD_COLUMNS}, ${SOFT_DELETE_COLUMNS},
        email text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
        display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 100),
        phone text NULL,
        role_id integer NOT NULL REFERENCES roles (id),
        status_id integer NOT NULL DEFAULT 1 REFERENCES user_statuses (id),
        pin_hash text NULL,
        pin_reset_at timestamptz NULL
      )`);
    // Case-insensitive and including deleted users: a deleted user keeps its email.
    await db.query('CREATE UNIQUE INDEX users_email_key ON users (lower(email))');
    await db.query('CREATE INDEX users_status_idx ON users (status_id, id)');
    await db.query('CREATE INDEX users_role_idx ON users (role_id, id)');
    await db.query('CREATE INDEX users_email_sort_idx ON users (email, id)');
    await db.query('CREATE INDEX users_display_name_idx ON users (display_name, id)');
    await db.query('CREATE INDEX users_created_at_idx ON users (created_at, id)');
    await db.query('CREATE INDEX users_updated_at_idx ON users (updated_at, id)');
    await db.query('CREATE INDEX users_search_idx ON users USING gin (email gin_trgm_ops, display_name gin_trgm_ops)');
    await db.query(
      'CREATE TRIGGER users_version BEFORE UPDATE ON users FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );

    await db.query(`
      CREATE TABLE auth_sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id bigint NOT NULL REFERENCES users (id),
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        created_by bigint NULL,
        updated_by bigint NULL,
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz NULL,
        revoked_by bigint NULL,
        revoke_reason text NULL
      )`);
    await db.query('CREATE INDEX auth_sessions_live_idx ON auth_sessions (user_id) WHERE revoked_at IS NULL');
    await db.query(
      'CREATE TRIGGER auth_sessions_version BEFORE UPDATE ON auth_sessions FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE auth_sessions');
    await db.query('DROP TABLE users');
    await db.query('DROP TABLE permissions');
    await db.query('DROP TABLE user_statuses');
    await db.query('DROP TABLE roles');
  }
}
