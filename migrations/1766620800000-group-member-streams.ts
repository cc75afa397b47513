import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes for reading who may act on a device in windows of user ids (part 6.13 through groups,
 * `DeviceAccessWindowsRepository`): a group's direct user members at T in user order, the newest
 * version of each first, with what decides membership in the index (a window reads as many
 * entries as it keeps, not the group's whole history); and a group's member groups alone, without
 * reading its user members.
 */
export class GroupMemberStreams1766620800000 implements MigrationInterface {
  name = 'GroupMemberStreams1766620800000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE INDEX group_membership_history_user_stream_idx
      ON group_membership_history (group_id, user_id, valid_from DESC, id DESC) INCLUDE (is_active, expires_at)
      WHERE user_id IS NOT NULL`);
    await db.query(`CREATE INDEX group_membership_history_member_groups_idx
      ON group_membership_history (group_id, membership_id, valid_from DESC, id DESC)
      INCLUDE (member_group_id, is_active, expires_at) WHERE member_group_id IS NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX group_membership_history_member_groups_idx');
    await db.query('DROP INDEX group_membership_history_user_stream_idx');
  }
}
