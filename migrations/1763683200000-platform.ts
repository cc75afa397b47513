import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Shared trigger functions and the append-only audit log. */
export class Platform1763683200000 implements MigrationInterface {
  name = 'Platform1763683200000';

  async up(db: QueryRunner): Promise<void> {
    // Every mutable table attaches this trigger, so the version (the ETag) moves on every write.
    await db.query(`
      CREATE FUNCTION bump_row_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.version := OLD.version + 1;
        NEW.updated_at := now();
        RETURN NEW;
      END $$`);
    await db.query(`
      CREATE TABLE audit_events (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        occurred_at timestamptz NOT NULL DEFAULT now(),
        actor_id bigint NULL,
        action text NOT NULL,
        resource_type text NOT NULL,
        resource_id text NULL,
        request_id text NULL,
        reason text NULL,
        changes jsonb NOT NULL DEFAULT '{}'::jsonb
      )`);
    await db.query('CREATE INDEX audit_events_occurred_at_idx ON audit_events (occurred_at DESC, id)');
    await db.query('CREATE INDEX audit_events_actor_idx ON audit_events (actor_id, occurred_at DESC)');
    await db.query('CREATE INDEX audit_events_action_idx ON audit_events (action, occurred_at DESC)');
    await db.query(
      'CREATE INDEX audit_events_resource_idx ON audit_events (resource_type, resource_id, occurred_at DESC)',
    );
    await db.query(`
      CREATE FUNCTION refuse_audit_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await db.query(`
      CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
      FOR EACH ROW EXECUTE FUNCTION refuse_audit_change()`);
    await db.query(`
      CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
      FOR EACH STATEMENT EXECUTE FUNCTION refuse_audit_change()`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE audit_events');
    await db.query('DROP FUNCTION refuse_audit_change()');
    await db.query('DROP FUNCTION bump_row_version()');
  }
}
