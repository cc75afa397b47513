import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Groups in access reviews and findings (part 6.16, v1.3). A campaign's item may now be a group's
 * right (a grant `g` or an authority permission `a` held by a group: `group_id` set, no user) or a
 * user's membership in a group (`m`, its `path_id` the membership, with both `user_id` and
 * `group_id`). The last use of a membership (`m` in `access_path_uses`) is noted when a request is
 * allowed through a right its group, or a group above it, holds.
 */
export class GroupReviews1766361600000 implements MigrationInterface {
  name = 'GroupReviews1766361600000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE access_review_items
      DROP CONSTRAINT access_review_items_kind_check,
      DROP CONSTRAINT access_review_items_check,
      ALTER COLUMN user_id DROP NOT NULL,
      ADD COLUMN group_id bigint NULL,
      ADD CONSTRAINT access_review_items_kind_check CHECK (kind IN ('g', 'a', 'o', 'm')),
      ADD CONSTRAINT access_review_items_device_check CHECK ((kind IN ('g', 'm')) = (device_id IS NULL)),
      ADD CONSTRAINT access_review_items_holder_check CHECK (
        CASE kind WHEN 'm' THEN user_id IS NOT NULL AND group_id IS NOT NULL
                  WHEN 'o' THEN user_id IS NOT NULL AND group_id IS NULL
                  ELSE (user_id IS NULL) <> (group_id IS NULL) END)`);
    await db.query('CREATE INDEX access_review_items_group_idx ON access_review_items (review_id, group_id, id)');
    await db.query(`ALTER TABLE access_path_uses DROP CONSTRAINT access_path_uses_kind_check,
      ADD CONSTRAINT access_path_uses_kind_check CHECK (kind IN ('g', 'a', 'm'))`);
    // The findings page live user memberships oldest first, as they do grants and authority permissions.
    await db.query(
      `CREATE INDEX group_memberships_live_users_idx ON group_memberships (added_at, id)
       WHERE removed_at IS NULL AND user_id IS NOT NULL`,
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX group_memberships_live_users_idx');
    await db.query("DELETE FROM access_path_uses WHERE kind = 'm'");
    await db.query(`ALTER TABLE access_path_uses DROP CONSTRAINT access_path_uses_kind_check,
      ADD CONSTRAINT access_path_uses_kind_check CHECK (kind IN ('g', 'a'))`);
    await db.query("DELETE FROM access_review_items WHERE kind = 'm' OR group_id IS NOT NULL");
    await db.query(`ALTER TABLE access_review_items
      DROP CONSTRAINT access_review_items_holder_check,
      DROP CONSTRAINT access_review_items_device_check,
      DROP CONSTRAINT access_review_items_kind_check,
      DROP COLUMN group_id,
      ALTER COLUMN user_id SET NOT NULL,
      ADD CONSTRAINT access_review_items_kind_check CHECK (kind IN ('g', 'a', 'o')),
      ADD CONSTRAINT access_review_items_check CHECK ((kind = 'g') = (device_id IS NULL))`);
  }
}
