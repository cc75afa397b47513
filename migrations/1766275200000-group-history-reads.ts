import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reads of the group history as of a moment (part 6.13 through groups), and an index on
 * memberships' expiries: the groups a user belongs
 * to at T and the users a group reaches at T, each one index range per membership step (at most 5
 * steps), from `group_membership_history` and `group_history` (migration `groups`). A deleted group
 * carries nothing and stops nesting; a membership counts while active and not expired at T.
 */
export class GroupHistoryReads1766275200000 implements MigrationInterface {
  name = 'GroupHistoryReads1766275200000';

  async up(db: QueryRunner): Promise<void> {
    // The next expiry bounds how long a cached access page is good; the announcer reads them in order.
    await db.query(
      'CREATE INDEX group_memberships_expires_at_idx ON group_memberships (expires_at) WHERE expires_at IS NOT NULL',
    );
    // One row (its role, maybe null) when the group is live at T; none when deleted or not yet made.
    await db.query(`CREATE FUNCTION group_role_at(p_group bigint, p_at timestamptz)
      RETURNS TABLE (role_id integer) LANGUAGE sql STABLE AS $$
        SELECT v.role_id FROM (
          SELECT h.role_id, h.is_deleted FROM group_history h
          WHERE h.group_id = p_group AND h.valid_from <= p_at ORDER BY h.valid_from DESC, h.id DESC LIMIT 1) v
        WHERE NOT v.is_deleted
      $$`);
    // The live groups a user, or a group, is a direct member of at T, with the membership's expiry.
    for (const [name, column] of [
      ['user_memberships_at', 'user_id'],
      ['group_memberships_at', 'member_group_id'],
    ] as const)
      await db.query(`CREATE FUNCTION ${name}(p_member bigint, p_at timestamptz)
        RETURNS TABLE (group_id bigint, expires_at timestamptz) LANGUAGE sql STABLE AS $$
          SELECT v.group_id, v.expires_at FROM (
            SELECT DISTINCT ON (h.membership_id) h.group_id, h.is_active, h.expires_at
            FROM group_membership_history h WHERE h.${column} = p_member AND h.valid_from <= p_at
            ORDER BY h.membership_id, h.valid_from DESC, h.id DESC) v
          WHERE v.is_active AND (v.expires_at IS NULL OR v.expires_at > p_at)
            AND EXISTS (SELECT 1 FROM group_role_at(v.group_id, p_at))
        $$`);
    // A user's groups at T: one lasting chain each (latest expiry, then shortest), as the live reads.
    await db.query(`CREATE FUNCTION user_groups_at(p_user bigint, p_at timestamptz)
      RETURNS TABLE (group_id bigint, role_id integer, via bigint[], expires_at timestamptz) LANGUAGE sql STABLE AS $$
        WITH RECURSIVE reach(group_id, via, expires_at) AS (
          SELECT m.group_id, ARRAY[m.group_id], m.expires_at FROM user_memberships_at(p_user, p_at) m
          UNION ALL
          SELECT m.group_id, r.via || m.group_id, least(r.expires_at, m.expires_at)
          FROM reach r CROSS JOIN LATERAL group_memberships_at(r.group_id, p_at) m
          WHERE cardinality(r.via) < 5 AND m.group_id <> ALL (r.via))
        SELECT DISTINCT ON (r.group_id) r.group_id, g.role_id, r.via, r.expires_at
        FROM reach r CROSS JOIN LATERAL group_role_at(r.group_id, p_at) g
        ORDER BY r.group_id, r.expires_at DESC NULLS FIRST, cardinality(r.via)
      $$`);
    // The direct members (users and groups) of a group at T.
    await db.query(`CREATE FUNCTION group_members_at(p_group bigint, p_at timestamptz)
      RETURNS TABLE (user_id bigint, member_group_id bigint) LANGUAGE sql STABLE AS $$
        SELECT v.user_id, v.member_group_id FROM (
          SELECT DISTINCT ON (h.membership_id) h.user_id, h.member_group_id, h.is_active, h.expires_at
          FROM group_membership_history h WHERE h.group_id = p_group AND h.valid_from <= p_at
          ORDER BY h.membership_id, h.valid_from DESC, h.id DESC) v
        WHERE v.is_active AND (v.expires_at IS NULL OR v.expires_at > p_at)
      $$`);
    // The users a live group reaches at T (its members, and those of its live nested groups).
    await db.query(`CREATE FUNCTION group_users_at(p_group bigint, p_at timestamptz)
      RETURNS TABLE (user_id bigint) LANGUAGE sql STABLE AS $$
        WITH RECURSIVE down(group_id, via) AS (
          SELECT p_group, ARRAY[p_group] WHERE EXISTS (SELECT 1 FROM group_role_at(p_group, p_at))
          UNION ALL
          SELECT m.member_group_id, d.via || m.member_group_id
          FROM down d CROSS JOIN LATERAL group_members_at(d.group_id, p_at) m
          WHERE m.member_group_id IS NOT NULL AND cardinality(d.via) < 5 AND m.member_group_id <> ALL (d.via)
            AND EXISTS (SELECT 1 FROM group_role_at(m.member_group_id, p_at)))
        SELECT DISTINCT m.user_id FROM down d CROSS JOIN LATERAL group_members_at(d.group_id, p_at) m
        WHERE m.user_id IS NOT NULL
      $$`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP FUNCTION group_users_at(bigint, timestamptz)');
    await db.query('DROP FUNCTION group_members_at(bigint, timestamptz)');
    await db.query('DROP FUNCTION user_groups_at(bigint, timestamptz)');
    await db.query('DROP FUNCTION group_memberships_at(bigint, timestamptz)');
    await db.query('DROP FUNCTION user_memberships_at(bigint, timestamptz)');
    await db.query('DROP FUNCTION group_role_at(bigint, timestamptz)');
    await db.query('DROP INDEX group_memberships_expires_at_idx');
  }
}
