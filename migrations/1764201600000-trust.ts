import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Trust (issue 12): the `users.revoke_sessions` permission, who assigned each authority, a
 * revoked authority is never active, an owner's authority never expires, authority permissions
 * append-only at the database, and
 * audit-event indexes that serve every filter of `GET /audit-events` in its default order.
 */
export class Trust1764201600000 implements MigrationInterface {
  name = 'Trust1764201600000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("INSERT INTO permissions (id, code, device_scoped) VALUES (41, 'users.revoke_sessions', false)");
    // GET /users/{id}/sessions: newest first.
    await db.query('CREATE INDEX auth_sessions_user_newest_idx ON auth_sessions (user_id, created_at DESC, id)');

    // Who made the relationship and when: the creator, or the actor of the transfer that made or
    // revived it. Existing rows were made by their creator.
    await db.query(
      'ALTER TABLE authorities ADD COLUMN assigned_by bigint NULL, ADD COLUMN assigned_at timestamptz NULL',
    );
    await db.query('ALTER TABLE authorities DISABLE TRIGGER authorities_version');
    await db.query('UPDATE authorities SET assigned_by = created_by, assigned_at = created_at');
    // A revoked authority said `is_active: true` before this migration; it never is.
    await db.query('UPDATE authorities SET is_active = false WHERE revoked_at IS NOT NULL AND is_active');
    // An owner whose authority expires would lose every right on its own device: owners never expire.
    await db.query('UPDATE authorities SET expires_at = NULL WHERE owner AND expires_at IS NOT NULL');
    await db.query('ALTER TABLE authorities ENABLE TRIGGER authorities_version');
    await db.query(
      'ALTER TABLE authorities ALTER COLUMN assigned_at SET DEFAULT now(), ALTER COLUMN assigned_at SET NOT NULL',
    );
    await db.query(
      'ALTER TABLE authorities ADD CONSTRAINT authorities_revoked_inactive CHECK (revoked_at IS NULL OR NOT is_active)',
    );
    await db.query(
      'ALTER TABLE authorities ADD CONSTRAINT authorities_owner_never_expires CHECK (NOT owner OR expires_at IS NULL)',
    );

    // Append-only like permission grants: the one change ever allowed is stamping a revocation.
    await db.query(`
      CREATE FUNCTION authority_permissions_only_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (NEW.id, NEW.authority_id, NEW.permission_id, NEW.granted_by, NEW.granted_at)
               IS NOT DISTINCT FROM (OLD.id, OLD.authority_id, OLD.permission_id, OLD.granted_by, OLD.granted_at) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'authority_permissions is append-only: only a live row may be revoked, once' USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await db.query(
      'CREATE TRIGGER authority_permissions_append_only BEFORE UPDATE ON authority_permissions FOR EACH ROW EXECUTE FUNCTION authority_permissions_only_revoke()',
    );
    await db.query(
      'CREATE TRIGGER authority_permissions_no_delete BEFORE DELETE ON authority_permissions FOR EACH ROW EXECUTE FUNCTION refuse_change()',
    );

    // The cache epoch: bumped by a write whose cache work was lost because that instance could not
    // reach Redis; every instance polls it and drops the shared cache when it moves.
    await db.query(
      'CREATE TABLE cache_epoch (id boolean PRIMARY KEY DEFAULT true CHECK (id), epoch bigint NOT NULL DEFAULT 1)',
    );
    await db.query('INSERT INTO cache_epoch DEFAULT VALUES');

    // GET /audit-events sorts `occurred_at DESC, id ASC` by default: each filter gets an index in
    // exactly that order after its equality columns, so a page is an index range scan at any size.
    for (const index of ['audit_events_actor_idx', 'audit_events_action_idx', 'audit_events_resource_idx'])
      await db.query(`DROP INDEX ${index}`);
    await db.query('CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, occurred_at DESC, id)');
    await db.query('CREATE INDEX audit_events_action_idx ON audit_events (action, occurred_at DESC, id)');
    await db.query('CREATE INDEX audit_events_resource_type_idx ON audit_events (resource_type, occurred_at DESC, id)');
    await db.query('CREATE INDEX audit_events_resource_idx ON audit_events (resource_id, occurred_at DESC, id)');
    await db.query('CREATE INDEX audit_events_request_idx ON audit_events (request_id, occurred_at DESC, id)');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE cache_epoch');
    for (const index of [
      'audit_events_actor_idx',
      'audit_events_action_idx',
      'audit_events_resource_type_idx',
      'audit_events_resource_idx',
      'audit_events_request_idx',
    ]) {
      await db.query(`DROP INDEX ${index}`);
    }
    await db.query('CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, occurred_at DESC)');
    await db.query('CREATE INDEX audit_events_action_idx ON audit_events (action, occurred_at DESC)');
    await db.query(
      'CREATE INDEX audit_events_resource_idx ON audit_events (resource_type, resource_id, occurred_at DESC)',
    );
    await db.query('DROP TRIGGER authority_permissions_no_delete ON authority_permissions');
    await db.query('DROP TRIGGER authority_permissions_append_only ON authority_permissions');
    await db.query('DROP FUNCTION authority_permissions_only_revoke()');
    await db.query('ALTER TABLE authorities DROP CONSTRAINT authorities_owner_never_expires');
    await db.query('ALTER TABLE authorities DROP CONSTRAINT authorities_revoked_inactive');
    await db.query('ALTER TABLE authorities DROP COLUMN assigned_by, DROP COLUMN assigned_at');
    await db.query('DROP INDEX auth_sessions_user_newest_idx');
    await db.query("DELETE FROM permissions WHERE code = 'users.revoke_sessions'");
  }
}
