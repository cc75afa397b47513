import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Access governance (parts 6.15 and 6.16): the permissions 47–52 with the ids the contract gives
 * them, two of them device-scoped (approving a request and deciding a review item are judged per
 * device), and the expiry an approved request puts on the authority permission it grants. Only an
 * approval sets `expires_at`; a manual grant leaves it null (for ever).
 */
export class AccessGovernance1765324800000 implements MigrationInterface {
  name = 'AccessGovernance1765324800000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`INSERT INTO permissions (id, code, device_scoped) VALUES
      (47, 'access_requests.read', false), (48, 'access_requests.create', false),
      (49, 'access_requests.approve', true), (50, 'access_reviews.read', false),
      (51, 'access_reviews.manage', false), (52, 'access_reviews.decide', true)`);
    await db.query('ALTER TABLE authority_permissions ADD COLUMN expires_at timestamptz NULL');
    await db.query(
      'ALTER TABLE authority_permissions ADD CONSTRAINT authority_permissions_expiry CHECK (expires_at > granted_at)',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE authority_permissions DROP COLUMN expires_at');
    await db.query('DELETE FROM permissions WHERE id BETWEEN 47 AND 52');
  }
}
