import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How far retention has purged the feed (part 6.12): the feed position of the last event deleted,
 * `(0, 0)` while none ever was. A cursor below it points before events a reader can no longer get,
 * so the feed answers 410 `EVENT_CURSOR_EXPIRED` with this position as the cursor to resume from,
 * instead of silently skipping what was purged. The purge deletes the feed from its start only,
 * so every event after the horizon is still there.
 *
 * A database that already purged (before this migration) cannot say how far, so its horizon
 * starts just before its oldest event: a cursor below every kept event is refused, never answered
 * with a gap, and its `oldest_after` loses nothing that is still kept.
 */
export class EventsPurgeHorizon1765238400000 implements MigrationInterface {
  name = 'EventsPurgeHorizon1765238400000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE events_purge_horizon (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        seq bigint NOT NULL,
        id bigint NOT NULL
      )`);
    await db.query(`INSERT INTO events_purge_horizon (seq, id)
      SELECT COALESCE(oldest.seq, 0), COALESCE(oldest.id - 1, 0)
      FROM (SELECT 1) AS one LEFT JOIN LATERAL (
        SELECT seq, id FROM events WHERE seq IS NOT NULL ORDER BY seq, id LIMIT 1) AS oldest ON true`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE events_purge_horizon');
  }
}
