import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The feed's `data` is the resource as the API shows it after the write, plus `changes` (part
 * 6.12). A trigger on audit_events only has the audit row, so the service now writes each audit
 * event and its feed event in one statement (`appendAuditEvents`), and says so in the
 * transaction (`admin_api.feed_written`). The trigger stays for the length of a rolling upgrade:
 * instances still running the previous version write audit events only, and the trigger keeps
 * copying theirs, while it leaves the service's own alone. A later release drops it.
 */
export class EventsData1764979200000 implements MigrationInterface {
  name = 'EventsData1764979200000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE OR REPLACE FUNCTION events_from_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_setting('admin_api.feed_written', true) = 'on' THEN
          RETURN NULL;
        END IF;
        INSERT INTO events (type, occurred_at, actor_id, request_id, resource_type, resource_id, data)
        SELECT a.action, a.occurred_at, a.actor_id, a.request_id, a.resource_type, a.resource_id,
               jsonb_build_object('changes', a.changes)
        FROM inserted a ORDER BY a.id;
        RETURN NULL;
      END $$`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`CREATE OR REPLACE FUNCTION events_from_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO events (type, occurred_at, actor_id, request_id, resource_type, resource_id, data)
        SELECT a.action, a.occurred_at, a.actor_id, a.request_id, a.resource_type, a.resource_id,
               jsonb_build_object('changes', a.changes)
        FROM inserted a ORDER BY a.id;
        RETURN NULL;
      END $$`);
  }
}
