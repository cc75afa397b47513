import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Authority lists at scale: `created_at:desc` with the contract's `id:asc` tie-break is a mixed
 * ORDER BY, which only an index in that exact order serves without sorting every match; the
 * lists always exclude deleted rows, so the indexes are partial.
 */
export class ListIndexes1764115200000 implements MigrationInterface {
  name = 'ListIndexes1764115200000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(
      'CREATE INDEX authorities_user_newest_idx ON authorities (user_id, created_at DESC, id) WHERE NOT is_deleted',
    );
    await db.query(
      'CREATE INDEX authorities_active_newest_idx ON authorities (is_active, created_at DESC, id) WHERE NOT is_deleted',
    );
    await db.query(
      'CREATE INDEX authorities_device_newest_idx ON authorities (device_id, created_at DESC, id) WHERE NOT is_deleted',
    );
    await db.query('CREATE INDEX authorities_newest_idx ON authorities (created_at DESC, id) WHERE NOT is_deleted');
  }

  async down(db: QueryRunner): Promise<void> {
    for (const index of [
      'authorities_user_newest_idx',
      'authorities_active_newest_idx',
      'authorities_device_newest_idx',
      'authorities_newest_idx',
    ])
      await db.query(`DROP INDEX ${index}`);
  }
}
