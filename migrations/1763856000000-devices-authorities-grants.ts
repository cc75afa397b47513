import type { MigrationInterface, QueryRunner } from 'typeorm';
import {
  BASE_RECORD_COLUMNS_V1 as BASE_RECORD_COLUMNS,
  SOFT_DELETE_COLUMNS_V1 as SOFT_DELETE_COLUMNS,
} from './record-columns-v1.js';

/** Devices, authorities, ownership history, permission grants, authority permissions (parts 6.2-6.6). */
export class DevicesAuthoritiesGrants1763856000000 implements MigrationInterface {
  name = 'DevicesAuthoritiesGrants1763856000000';

  async up(db: QueryRunner): Promise<void> {
    // Append-only tables refuse UPDATE and DELETE (the audit log has its own older function).
    await db.query(`
      CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);

    await db.query(`
      CREATE TABLE devices (${BASE_RECORD_COLUMNS},
        serial_number text NOT NULL CHECK (length(serial_number) BETWEEN 1 AND 64),
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
        model text NULL CHECK (length(model) <= 100),
        -- The current owner, kept in step with the owner authority by transfer-owner.
        owner_user_id bigint NULL REFERENCES users (id)
      )`);
    await db.query('CREATE UNIQUE INDEX devices_serial_number_key ON devices (serial_number)');
    await db.query('CREATE INDEX devices_owner_idx ON devices (owner_user_id, id)');
    await db.query('CREATE INDEX devices_name_idx ON devices (name, id)');
    await db.query('CREATE INDEX devices_created_at_idx ON devices (created_at, id)');
    await db.query(
      'CREATE INDEX devices_search_idx ON devices USING gin (serial_number gin_trgm_ops, name gin_trgm_ops)',
    );
    await db.query(
      'CREATE TRIGGER devices_version BEFORE UPDATE ON devices FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );

    await db.query(`
      CREATE TABLE authorities (${BASE_RECORD_COLUMNS}, ${SOFT_DELETE_COLUMNS},
        device_id bigint NOT NULL REFERENCES devices (id),
        user_id bigint NOT NULL REFERENCES users (id),
        owner boolean NOT NULL DEFAULT false,
        is_active boolean NOT NULL DEFAULT true,
        revoked_at timestamptz NULL,
        revoked_by bigint NULL,
        revoke_reason text NULL,
        expires_at timestamptz NULL,
        label text NULL CHECK (length(label) <= 100)
      )`);
    // One row per pair for ever: a deleted authority keeps its pair (part 3).
    await db.query('CREATE UNIQUE INDEX authorities_device_user_key ON authorities (device_id, user_id)');
    // One owner per device at all times, whatever the code does.
    await db.query('CREATE UNIQUE INDEX authorities_one_owner_key ON authorities (device_id) WHERE owner');
    await db.query('CREATE INDEX authorities_user_created_idx ON authorities (user_id, created_at, id)');
    await db.query('CREATE INDEX authorities_active_created_idx ON authorities (is_active, created_at, id)');
    await db.query('CREATE INDEX authorities_created_idx ON authorities (created_at, id)');
    await db.query('CREATE INDEX authorities_updated_idx ON authorities (updated_at, id)');
    await db.query('CREATE INDEX authorities_search_idx ON authorities USING gin (label gin_trgm_ops)');
    await db.query(
      'CREATE TRIGGER authorities_version BEFORE UPDATE ON authorities FOR EACH ROW EXECUTE FUNCTION bump_row_version()',
    );

    await db.query(`
      CREATE TABLE ownership_transfers (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        device_id bigint NOT NULL REFERENCES devices (id),
        from_user_id bigint NULL REFERENCES users (id),
        to_user_id bigint NOT NULL REFERENCES users (id),
        reason text NULL,
        transferred_by bigint NULL,
        transferred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        request_id text NULL
      )`);
    await db.query(
      'CREATE INDEX ownership_transfers_device_idx ON ownership_transfers (device_id, transferred_at, id)',
    );
    await db.query(
      'CREATE TRIGGER ownership_transfers_append_only BEFORE UPDATE OR DELETE ON ownership_transfers FOR EACH ROW EXECUTE FUNCTION refuse_change()',
    );

    await db.query(`
      CREATE TABLE permission_grants (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        user_id bigint NOT NULL REFERENCES users (id),
        permission_id integer NOT NULL REFERENCES permissions (id),
        reason text NULL,
        expires_at timestamptz NULL,
        granted_by bigint NULL,
        granted_at timestamptz NOT NULL DEFAULT now(),
        revoked_by bigint NULL,
        revoked_at timestamptz NULL,
        revoke_reason text NULL
      )`);
    await db.query(
      'CREATE INDEX permission_grants_live_idx ON permission_grants (user_id, permission_id) WHERE revoked_at IS NULL',
    );
    await db.query('CREATE INDEX permission_grants_permission_idx ON permission_grants (permission_id, id)');
    await db.query('CREATE INDEX permission_grants_granted_at_idx ON permission_grants (granted_at, id)');
    // Append-only: the one change ever allowed is stamping the revocation of a live grant.
    await db.query(`
      CREATE FUNCTION permission_grants_only_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (NEW.id, NEW.user_id, NEW.permission_id, NEW.reason, NEW.expires_at, NEW.granted_by, NEW.granted_at)
               IS NOT DISTINCT FROM (OLD.id, OLD.user_id, OLD.permission_id, OLD.reason, OLD.expires_at, OLD.granted_by, OLD.granted_at) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'permission_grants is append-only: only a live grant may be revoked, once' USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await db.query(
      'CREATE TRIGGER permission_grants_append_only BEFORE UPDATE ON permission_grants FOR EACH ROW EXECUTE FUNCTION permission_grants_only_revoke()',
    );
    await db.query(
      'CREATE TRIGGER permission_grants_no_delete BEFORE DELETE ON permission_grants FOR EACH ROW EXECUTE FUNCTION refuse_change()',
    );

    await db.query(`
      CREATE TABLE authority_permissions (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        authority_id bigint NOT NULL REFERENCES authorities (id),
        permission_id integer NOT NULL REFERENCES permissions (id),
        granted_by bigint NULL,
        granted_at timestamptz NOT NULL DEFAULT now(),
        revoked_by bigint NULL,
        revoked_at timestamptz NULL
      )`);
    await db.query(
      'CREATE UNIQUE INDEX authority_permissions_active_key ON authority_permissions (authority_id, permission_id) WHERE revoked_at IS NULL',
    );
    await db.query('CREATE INDEX authority_permissions_authority_idx ON authority_permissions (authority_id, id)');
    await db.query('CREATE INDEX authority_permissions_permission_idx ON authority_permissions (permission_id, id)');
    await db.query('CREATE INDEX authority_permissions_granted_at_idx ON authority_permissions (granted_at, id)');

    // Versions of cached projections spanning many rows (a user's grants, a device's authority
    // set, later a user's read-state counts): bumped by every write that changes one, so cached
    // copies are compared-and-set by version.
    await db.query(`
      CREATE TABLE projection_versions (
        scope text NOT NULL,
        id bigint NOT NULL,
        version bigint NOT NULL DEFAULT 1,
        PRIMARY KEY (scope, id)
      )`);
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of [
      'projection_versions',
      'authority_permissions',
      'permission_grants',
      'ownership_transfers',
      'authorities',
      'devices',
    ]) {
      await db.query(`DROP TABLE ${table}`);
    }
    await db.query('DROP FUNCTION permission_grants_only_revoke()');
    await db.query('DROP FUNCTION refuse_change()');
  }
}
