import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SCIM 2.0 (contract v1.3, parts 6.1 and 6.19): users gain the identity provider's names for them.
 *
 * - `user_name`: SCIM's `userName`, unique case-insensitively; a user without one presents its
 *   email, so what is presented (`lower(coalesce(user_name, email))`) is unique too: no two users
 *   answer one identity provider's lookup. The index serves that lookup.
 * - `external_id`: the identity provider's id, unique.
 * - `scim_profile`: what SCIM sends that the admin API has no field for (`name.givenName`,
 *   `name.familyName`, the enterprise extension), kept as given and returned as it was.
 * - Indexes for every attribute a SCIM filter may name (part 6.19: indexed, never a scan).
 */
export class ScimUsers1766534400000 implements MigrationInterface {
  name = 'ScimUsers1766534400000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE users
        ADD COLUMN user_name text NULL CHECK (length(user_name) BETWEEN 1 AND 254),
        ADD COLUMN external_id text NULL CHECK (length(external_id) BETWEEN 1 AND 255),
        ADD COLUMN scim_profile jsonb NULL CHECK (jsonb_typeof(scim_profile) = 'object')`);
    await db.query('CREATE UNIQUE INDEX users_user_name_key ON users (lower(user_name))');
    await db.query('CREATE UNIQUE INDEX users_external_id_key ON users (external_id)');
    await db.query('CREATE UNIQUE INDEX users_presented_name_key ON users (lower(coalesce(user_name, email)))');
    await db.query('CREATE INDEX users_display_name_lower_idx ON users (lower(display_name), id)');
    await db.query('DROP INDEX users_search_idx');
    await db.query(
      'CREATE INDEX users_search_idx ON users USING gin (email gin_trgm_ops, display_name gin_trgm_ops, user_name gin_trgm_ops)',
    );
    await db.query(
      'CREATE INDEX users_scim_user_name_trgm_idx ON users USING gin (coalesce(user_name, email) gin_trgm_ops)',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX users_scim_user_name_trgm_idx');
    await db.query('DROP INDEX users_search_idx');
    await db.query('CREATE INDEX users_search_idx ON users USING gin (email gin_trgm_ops, display_name gin_trgm_ops)');
    await db.query('DROP INDEX users_display_name_lower_idx');
    await db.query('DROP INDEX users_presented_name_key');
    await db.query('ALTER TABLE users DROP COLUMN scim_profile, DROP COLUMN external_id, DROP COLUMN user_name');
  }
}
