import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The permissions the contract adds after `users.revoke_sessions`, with the ids its list gives
 * them (the next free ones, in that order): the event feed, webhooks, access questions and the
 * triggered cache rebuild. Their routes arrive with their modules; the catalogue is complete now.
 */
export class NextPermissions1764288000000 implements MigrationInterface {
  name = 'NextPermissions1764288000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`INSERT INTO permissions (id, code, device_scoped) VALUES
      (42, 'events.read', false), (43, 'webhooks.read', false), (44, 'webhooks.manage', false),
      (45, 'access.read', false), (46, 'cache.rebuild', false)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DELETE FROM permissions WHERE id BETWEEN 42 AND 46');
  }
}
