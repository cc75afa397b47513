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
 *   announces each minute what expired since this mark, with the instant as `occurred_at`, judged
 *   from the access history as of the instant.
 */
/** The advisory lock between writers of expiring rows (shared) and the expiry announcer. */
export const EXPIRY_WRITERS_LOCK = '7306020240617260002';

export class AccessEvents1765756800000 implements MigrationInterface {
  name = 'AccessEvents1765756800000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(commitStep(true));
    await db.query(`CREATE TABLE access_expiry_announcements (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        announced_until timestamptz NOT NULL DEFAULT now()
      )`);
    await db.query('INSERT INTO access_expiry_announcements DEFAULT VALUES');
    // A write that gives a row an expiry holds a shared lock until it commits (taken before the
    // row is stamped); the announcer takes it exclusively for a moment before reading the clock,
    // so every such write is either committed and visible to it, or stamps after that moment.
    await db.query(`CREATE FUNCTION access_expiry_writer() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(${EXPIRY_WRITERS_LOCK});
        RETURN NEW;
      END $$`);
    for (const table of ['permission_grants', 'authorities', 'authority_permissions'])
      // Named to fire before a table's other BEFORE triggers (permission_grants_period stamps).
      await db.query(`CREATE TRIGGER ${table}_expiry_writer BEFORE INSERT OR UPDATE OF expires_at ON ${table}
        FOR EACH ROW WHEN (NEW.expires_at IS NOT NULL) EXECUTE FUNCTION access_expiry_writer()`);
    // Expiries are read from the history (every expiry a record ever had, even one changed or
    // revoked since): grants have their own index on expires_at (migration next-change-indexes).
    await db.query(
      'CREATE INDEX authority_history_expires_at_idx ON authority_history (expires_at) INCLUDE (user_id, device_id) WHERE expires_at IS NOT NULL',
    );
    await db.query(
      'CREATE INDEX authority_permission_history_expires_at_idx ON authority_permission_history (expires_at) INCLUDE (user_id, device_id) WHERE expires_at IS NOT NULL',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ['permission_grants', 'authorities', 'authority_permissions'])
      await db.query(`DROP TRIGGER ${table}_expiry_writer ON ${table}`);
    await db.query('DROP FUNCTION access_expiry_writer()');
    await db.query('DROP INDEX authority_permission_history_expires_at_idx');
    await db.query('DROP INDEX authority_history_expires_at_idx');
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
