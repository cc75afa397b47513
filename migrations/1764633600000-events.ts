import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event feed (part 6.12). Every audit event is copied here by a statement trigger, in the
 * transaction that wrote it; workers append their own events (push deliveries). Each row carries
 * the id of the transaction that wrote it (`xid`): the feed reads only rows whose transaction is
 * older than the oldest one still running, in (xid, id) order, so no event can ever appear behind
 * one a reader has already been given (ids from a sequence alone are not commit order).
 */
export class Events1764633600000 implements MigrationInterface {
  name = 'Events1764633600000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE events (
      xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
      id bigint GENERATED ALWAYS AS IDENTITY,
      type text NOT NULL,
      occurred_at timestamptz NOT NULL DEFAULT now(),
      actor_id bigint NULL,
      request_id text NULL,
      resource_type text NULL,
      resource_id text NULL,
      data jsonb NOT NULL DEFAULT '{}',
      PRIMARY KEY (xid, id)
    )`);
    await db.query('CREATE INDEX events_occurred_at_idx ON events (occurred_at)');
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

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TRIGGER audit_events_to_events ON audit_events');
    await db.query('DROP FUNCTION events_from_audit()');
    await db.query('DROP TABLE events');
  }
}
