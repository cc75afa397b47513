import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event feed in commit order (part 6.12). Ordering by the writing transaction's id was safe
 * (nothing could appear behind a reader) but was first-write order: two transactions changing
 * the same record could be listed the other way round from how they committed.
 *
 * Now each transaction that wrote events takes its feed position (`seq`) as it commits: a
 * deferred trigger, fired once per transaction just before COMMIT, takes one advisory lock,
 * draws the next position and stamps it on the transaction's events. The lock is held until
 * the commit is visible, so positions are handed out in commit order and a reader that sees a
 * position sees every lower one. Only the commit step itself is serialised, not the writes.
 */
export class EventsCommitOrder1764806400000 implements MigrationInterface {
  name = 'EventsCommitOrder1764806400000';

  /** Tables this migration's triggers write (the feed's commit step); no repository writes them. */
  static readonly triggerWritten = ['event_transactions'];

  async up(db: QueryRunner): Promise<void> {
    await db.query('CREATE SEQUENCE events_commit_seq AS bigint');
    await db.query('ALTER TABLE events ADD COLUMN seq bigint NULL');
    // Events written before this migration keep their ids and their order: their position is the
    // transaction id that ordered them, and new positions start past every transaction id handed
    // out so far, so a cursor stored before the upgrade (an event id, or the horizon the feed gave
    // as next_after) still means the same place in the feed.
    await db.query('UPDATE events SET seq = xid::text::bigint');
    await db.query(`SELECT setval('events_commit_seq', GREATEST(
        (SELECT max(seq) FROM events), pg_snapshot_xmax(pg_current_snapshot())::text::bigint, 1))`);
    await db.query('CREATE UNIQUE INDEX events_seq_idx ON events (seq, id)');
    await db.query('CREATE INDEX events_type_seq_idx ON events (type, seq, id)');
    await db.query('DROP INDEX IF EXISTS events_type_idx');
    // One row per running transaction that wrote events: its deferred trigger fires once, at commit.
    await db.query('CREATE TABLE event_transactions (xid xid8 PRIMARY KEY)');
    await db.query(`CREATE OR REPLACE FUNCTION events_stamp_xid() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        writer xid8 := pg_current_xact_id();
      BEGIN
        NEW.xid := writer;
        NEW.seq := NULL; -- an INSERT cannot choose its place in the feed
        -- The setting is local to the transaction (and undone with a rolled-back savepoint).
        IF current_setting('admin_api.events_xid', true) IS DISTINCT FROM writer::text THEN
          INSERT INTO event_transactions (xid) VALUES (writer) ON CONFLICT DO NOTHING;
          PERFORM set_config('admin_api.events_xid', writer::text, true);
        END IF;
        RETURN NEW;
      END $$`);
    await db.query(`CREATE FUNCTION events_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        feed_position bigint;
      BEGIN
        -- Held until this transaction is visible: the next one to commit events waits here.
        PERFORM pg_advisory_xact_lock(7306020240617260001);
        feed_position := nextval('events_commit_seq');
        UPDATE events SET seq = feed_position WHERE xid = NEW.xid;
        DELETE FROM event_transactions WHERE xid = NEW.xid;
        -- An event written after this step (by a later deferred trigger) queues a step of its own.
        PERFORM set_config('admin_api.events_xid', '', true);
        RETURN NULL;
      END $$`);
    await db.query(`CREATE CONSTRAINT TRIGGER event_transactions_commit AFTER INSERT ON event_transactions
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION events_commit()`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TRIGGER event_transactions_commit ON event_transactions');
    await db.query('DROP FUNCTION events_commit()');
    await db.query('DROP TABLE event_transactions');
    await db.query(`CREATE OR REPLACE FUNCTION events_stamp_xid() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.xid := pg_current_xact_id();
        RETURN NEW;
      END $$`);
    await db.query('CREATE INDEX IF NOT EXISTS events_type_idx ON events (type, xid, id)');
    await db.query('DROP INDEX events_type_seq_idx');
    await db.query('DROP INDEX events_seq_idx');
    await db.query('ALTER TABLE events DROP COLUMN seq');
    await db.query('DROP SEQUENCE events_commit_seq');
  }
}
