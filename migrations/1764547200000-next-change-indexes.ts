import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The next moment a cached list page of sessions, permission grants or read states changes by
 * itself (an expiry, a snooze ending) is read before each page is loaded (`nextChangeOf`): without
 * these, that was a scan of the whole table on every page miss.
 */
export class NextChangeIndexes1764547200000 implements MigrationInterface {
  name = 'NextChangeIndexes1764547200000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('CREATE INDEX auth_sessions_expires_at_idx ON auth_sessions (expires_at)');
    await db.query(
      'CREATE INDEX permission_grants_expires_at_idx ON permission_grants (expires_at) WHERE expires_at IS NOT NULL',
    );
    await db.query(
      'CREATE INDEX message_read_state_snoozed_until_idx ON message_read_state (snoozed_until) WHERE snoozed_until IS NOT NULL',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX message_read_state_snoozed_until_idx');
    await db.query('DROP INDEX permission_grants_expires_at_idx');
    await db.query('DROP INDEX auth_sessions_expires_at_idx');
  }
}
