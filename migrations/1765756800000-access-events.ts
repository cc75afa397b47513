import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Access-change events (part 6.17).
 *
 * - The feed's commit step also names each `access.gained` / `access.lost` event's cause: the
 *   write's own event, the transaction's first event that is not an access event. Its id (feed
 *   position and row) exists only here, as the transaction commits, so the writer leaves
 *   `"cause": "write"` and this step fills it in, in the same UPDATE that places the events.
 * - `access_expiry_announcements`: how far expiries (authorities, grants, authority permissions)
 *   have been announced as `access.lost`. No write marks the instant something expires, so a job
 *   announces each minute what expired since this mark, with the instant as `occurred_at`.
 */
export class AccessEvents1765756800000 implements MigrationInterface {
  name = 'AccessEvents1765756800000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(commitStep(true));
    await db.query(`CREATE TABLE access_expiry_announcements (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        announced_until timestamptz NOT NULL DEFAULT now()
      )`);
    // Expiries are found by the indexes on each table's expires_at (migrations next-change-indexes,
    // access-history and expiring-authority-permissions).
    await db.query('INSERT INTO access_expiry_announcements DEFAULT VALUES');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE access_expiry_announcements');
    await db.query(commitStep(false));
  }
}

/** The feed's commit step (migration `events-commit-order`), with or without naming the causes. */
function commitStep(causes: boolean): string {
  const place = causes
    ? `cause_id := (SELECT min(id) FROM events WHERE xid = NEW.xid AND type NOT IN ('access.gained', 'access.lost'));
        UPDATE events SET seq = feed_position,
          data = CASE WHEN type IN ('access.gained', 'access.lost') AND data->>'cause' = 'write'
                      THEN jsonb_set(data, '{cause}', CASE WHEN cause_id IS NULL THEN 'null'::jsonb
                           ELSE to_jsonb(lpad(feed_position::text, 20, '0') || '-' || lpad(cause_id::text, 20, '0')) END)
                      ELSE data END
        WHERE xid = NEW.xid;`
    : 'UPDATE events SET seq = feed_position WHERE xid = NEW.xid;';
  return `CREATE OR REPLACE FUNCTION events_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        feed_position bigint;
        cause_id bigint;
      BEGIN
        -- Held until this transaction is visible: the next one to commit events waits here.
        PERFORM pg_advisory_xact_lock(7306020240617260001);
        feed_position := nextval('events_commit_seq');
        ${place}
        DELETE FROM event_transactions WHERE xid = NEW.xid;
        -- An event written after this step (by a later deferred trigger) queues a step of its own.
        PERFORM set_config('admin_api.events_xid', '', true);
        RETURN NULL;
      END $$`;
}
