import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The holder of an authority permission (its authority's user, which never changes) kept on the
 * row itself, so that one index gives a user's live authority permissions in the order they were
 * granted: `GET /access-findings?user_id=` (part 6.16) pages them without gathering and sorting
 * every path of a user who holds tens of thousands. Filled by a trigger on insert, whoever
 * inserts; the append-only rule now guards it like the other columns.
 */
export class AuthorityPermissionHolders1766016000000 implements MigrationInterface {
  name = 'AuthorityPermissionHolders1766016000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE authority_permissions ADD COLUMN user_id bigint NULL');
    // The backfill is not a change of any right: the append-only rule and the access history's
    // update trigger stand aside for it, inside this migration's transaction.
    await db.query('ALTER TABLE authority_permissions DISABLE TRIGGER authority_permissions_append_only');
    await db.query('ALTER TABLE authority_permissions DISABLE TRIGGER authority_permissions_access_history_update');
    await db.query(
      'UPDATE authority_permissions ap SET user_id = a.user_id FROM authorities a WHERE a.id = ap.authority_id',
    );
    await db.query('ALTER TABLE authority_permissions ENABLE TRIGGER authority_permissions_access_history_update');
    await db.query('ALTER TABLE authority_permissions ENABLE TRIGGER authority_permissions_append_only');
    await db.query(`
      CREATE FUNCTION authority_permission_holder() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.user_id := (SELECT a.user_id FROM authorities a WHERE a.id = NEW.authority_id);
        RETURN NEW;
      END $$`);
    await db.query(
      'CREATE TRIGGER authority_permissions_holder BEFORE INSERT ON authority_permissions FOR EACH ROW EXECUTE FUNCTION authority_permission_holder()',
    );
    await db.query('ALTER TABLE authority_permissions ALTER COLUMN user_id SET NOT NULL');
    await db.query(`
      CREATE OR REPLACE FUNCTION authority_permissions_only_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (NEW.id, NEW.authority_id, NEW.permission_id, NEW.granted_by, NEW.granted_at, NEW.expires_at, NEW.user_id)
               IS NOT DISTINCT FROM (OLD.id, OLD.authority_id, OLD.permission_id, OLD.granted_by, OLD.granted_at, OLD.expires_at, OLD.user_id) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'authority_permissions is append-only: only a live row may be revoked, once' USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await db.query(
      'CREATE INDEX authority_permissions_user_live_granted_idx ON authority_permissions (user_id, granted_at, id) WHERE revoked_at IS NULL',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX authority_permissions_user_live_granted_idx');
    await db.query('DROP TRIGGER authority_permissions_holder ON authority_permissions');
    await db.query('DROP FUNCTION authority_permission_holder()');
    await db.query(`
      CREATE OR REPLACE FUNCTION authority_permissions_only_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (NEW.id, NEW.authority_id, NEW.permission_id, NEW.granted_by, NEW.granted_at, NEW.expires_at)
               IS NOT DISTINCT FROM (OLD.id, OLD.authority_id, OLD.permission_id, OLD.granted_by, OLD.granted_at, OLD.expires_at) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'authority_permissions is append-only: only a live row may be revoked, once' USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await db.query('ALTER TABLE authority_permissions DROP COLUMN user_id');
  }
}
