import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The feed's `data` is the resource as the API shows it after the write, plus `changes` (part
 * 6.12). A trigger on audit_events only has the audit row, so the service now writes each audit
 * event and its feed event in one statement (`appendAuditEvents`), and the trigger goes.
 */
export class EventsData1764979200000 implements MigrationInterface {
  name = 'EventsData1764979200000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('DROP TRIGGER IF EXISTS audit_events_to_events ON audit_events');
    await db.query('DROP FUNCTION IF EXISTS events_from_audit()');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`CREATE FUNCTION events_from_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO events (type, occurred_at, actor_id, request_id, resource_type, resource_id, data)
        SELECT a.action, a.occurred_at, a.actor_id, a.request_id, a.resource_type, a.resource_id,
               jsonb_build_object('changes', a.changes)
        FROM inserted a ORDER BY a.id;
        RETURN NULL;
      END $$`);
    await db.query(`CREATE TRIGGER audit_events_to_events AFTER INSERT ON audit_events
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION events_from_audit()`);
  }
}
