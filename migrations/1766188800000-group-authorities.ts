import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The holder columns that become "a user's, or null for a group's" (the access history's among them). */
const USER_COLUMNS = [
  'authorities',
  'authority_permissions',
  'authority_history',
  'authority_permission_history',
  'authority_right_history',
  'authority_rights',
] as const;

/**
 * A group's authority (contract v1.3, part 6.3): an authority relates a device to a user or to a
 * group (exactly one), and every member of the group holds it with its authority permissions. A
 * group's authority is never the owner. The pair `(device_id, group_id)` is unique like the user's
 * pair. Authority permissions keep their holder on the row: the user, or now the group. The access
 * history keeps recording authorities by id (a group's rows carry no user; the group is the
 * authority's, which never changes).
 */
export class GroupAuthorities1766188800000 implements MigrationInterface {
  name = 'GroupAuthorities1766188800000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE authorities ADD COLUMN group_id bigint NULL REFERENCES groups (id)');
    for (const table of USER_COLUMNS) await db.query(`ALTER TABLE ${table} ALTER COLUMN user_id DROP NOT NULL`);
    await db.query(
      'ALTER TABLE authorities ADD CONSTRAINT authorities_one_holder CHECK ((user_id IS NULL) <> (group_id IS NULL))',
    );
    await db.query(
      'ALTER TABLE authorities ADD CONSTRAINT authorities_group_never_owner CHECK (group_id IS NULL OR NOT owner)',
    );
    await db.query(
      'CREATE UNIQUE INDEX authorities_device_group_key ON authorities (device_id, group_id) WHERE group_id IS NOT NULL',
    );
    await db.query(
      'CREATE INDEX authorities_group_idx ON authorities (group_id, device_id) WHERE group_id IS NOT NULL',
    );

    await db.query('ALTER TABLE authority_permissions ADD COLUMN group_id bigint NULL');
    await db.query(`CREATE OR REPLACE FUNCTION authority_permission_holder() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        SELECT a.user_id, a.group_id INTO NEW.user_id, NEW.group_id FROM authorities a WHERE a.id = NEW.authority_id;
        RETURN NEW;
      END $$`);
    await db.query(`CREATE OR REPLACE FUNCTION authority_permissions_only_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (NEW.id, NEW.authority_id, NEW.permission_id, NEW.granted_by, NEW.granted_at, NEW.expires_at, NEW.user_id, NEW.group_id)
               IS NOT DISTINCT FROM (OLD.id, OLD.authority_id, OLD.permission_id, OLD.granted_by, OLD.granted_at, OLD.expires_at, OLD.user_id, OLD.group_id) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'authority_permissions is append-only: only a live row may be revoked, once' USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await db.query(
      'CREATE INDEX authority_permissions_group_live_idx ON authority_permissions (group_id, granted_at, id) WHERE revoked_at IS NULL AND group_id IS NOT NULL',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX authority_permissions_group_live_idx');
    await db.query(`CREATE OR REPLACE FUNCTION authority_permissions_only_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (NEW.id, NEW.authority_id, NEW.permission_id, NEW.granted_by, NEW.granted_at, NEW.expires_at, NEW.user_id)
               IS NOT DISTINCT FROM (OLD.id, OLD.authority_id, OLD.permission_id, OLD.granted_by, OLD.granted_at, OLD.expires_at, OLD.user_id) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'authority_permissions is append-only: only a live row may be revoked, once' USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await db.query(`CREATE OR REPLACE FUNCTION authority_permission_holder() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.user_id := (SELECT a.user_id FROM authorities a WHERE a.id = NEW.authority_id);
        RETURN NEW;
      END $$`);
    await db.query('ALTER TABLE authority_permissions DROP COLUMN group_id');
    await db.query('DROP INDEX authorities_group_idx');
    await db.query('DROP INDEX authorities_device_group_key');
    await db.query('ALTER TABLE authorities DROP CONSTRAINT authorities_group_never_owner');
    await db.query('ALTER TABLE authorities DROP CONSTRAINT authorities_one_holder');
    // Only possible while no group holds an authority (they cannot be told apart from users' then).
    for (const table of USER_COLUMNS) await db.query(`ALTER TABLE ${table} ALTER COLUMN user_id SET NOT NULL`);
    await db.query('ALTER TABLE authorities DROP COLUMN group_id');
  }
}
