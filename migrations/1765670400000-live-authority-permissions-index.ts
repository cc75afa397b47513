import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The live rows of each (authority, permission), expiring ones included. Since expiring
 * authority permissions the unique index covers only rows that never expire, and the question
 * every grant asks ("is this pair held, unexpired?") lost its index: the planner ANDed the
 * authority's rows with every row of the permission, and a bulk of 100 000 grants took minutes.
 */
export class LiveAuthorityPermissionsIndex1765670400000 implements MigrationInterface {
  name = 'LiveAuthorityPermissionsIndex1765670400000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(
      'CREATE INDEX authority_permissions_live_idx ON authority_permissions (authority_id, permission_id) WHERE revoked_at IS NULL',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX authority_permissions_live_idx');
  }
}
