import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Last use of every revocable path (part 6.16): a permission grant (`kind` 'g', the grant's id) or
 * an authority permission (`kind` 'a', its id), when a request was last allowed through it. Written
 * by the instances in batches, off the requests' path, at most once a minute per path and
 * instance; a later use only ever moves it forward. No history: a path revoked and granted again
 * is a new row, so a new path (never used since granted).
 */
export class AccessPathUses1765843200000 implements MigrationInterface {
  name = 'AccessPathUses1765843200000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE access_path_uses (
        kind char(1) NOT NULL CHECK (kind IN ('g', 'a')),
        path_id bigint NOT NULL,
        last_used_at timestamptz NOT NULL,
        PRIMARY KEY (kind, path_id)
      )`);
    // When recording began: a null last use means never used since then (part 6.16).
    await db.query(`CREATE TABLE access_path_uses_start (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        started_at timestamptz NOT NULL DEFAULT now()
      )`);
    await db.query('INSERT INTO access_path_uses_start DEFAULT VALUES');
    // The findings (GET /access-findings) page live authority permissions oldest first; grants
    // have their (granted_at, id) index already (migration devices-authorities-grants).
    await db.query(
      'CREATE INDEX authority_permissions_live_granted_idx ON authority_permissions (granted_at, id) WHERE revoked_at IS NULL',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX authority_permissions_live_granted_idx');
    await db.query('DROP TABLE access_path_uses_start');
    await db.query('DROP TABLE access_path_uses');
  }
}
