import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event feed's order, kept honest and fast: the writing transaction's id is stamped by the
 * database (an INSERT cannot choose its place in the feed), and a reader of a few types walks
 * each type's own range in feed order instead of scanning every event after its cursor.
 */
export class EventsOrder1764720000000 implements MigrationInterface {
  name = 'EventsOrder1764720000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE OR REPLACE FUNCTION events_stamp_xid() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.xid := pg_current_xact_id();
        RETURN NEW;
      END $$`);
    await db.query(
      'CREATE TRIGGER events_stamp_xid BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_stamp_xid()',
    );
    // IF NOT EXISTS: a development database may have it from a pre-release version of the events migration.
    await db.query('CREATE INDEX IF NOT EXISTS events_type_idx ON events (type, xid, id)');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX events_type_idx');
    await db.query('DROP TRIGGER events_stamp_xid ON events');
    await db.query('DROP FUNCTION events_stamp_xid()');
  }
}
