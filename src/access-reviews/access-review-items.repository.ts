import { Injectable } from '@nestjs/common';
import { table } from '../platform/database/table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import type { Scope } from '../platform/http/list/list-sql.js';
import { ListPages } from '../platform/projections/list-pages.js';
import { Projections } from '../platform/projections/projections.js';
import type { ListResponse } from '../platform/http/responses.js';
import {
  REVIEW_DECISIONS,
  REVIEW_ITEM_KINDS,
  type AccessReviewItemDto,
  type ReviewDecision,
} from './dto/access-review.dto.js';
import { effectiveRoleSql, userGroupChains } from '../access-model/group-facts.repository.js';
import { conferringGroups } from './conferring-groups.repository.js';

const ITEMS = table('access_review_items');

/** `revoke` when the path has no use within the campaign's UNUSED_ACCESS_DAYS (never used included), as the findings judge. */
const RECOMMENDATION = `CASE WHEN i.kind <> 'o' AND (u.last_used_at IS NULL
  OR u.last_used_at < now() - make_interval(days => r.unused_days)) THEN 'revoke' ELSE 'keep' END`;

const DECIDED_BY = `CASE i.kind
    WHEN 'g' THEN CASE WHEN i.group_id IS NULL THEN 'permission_grant' ELSE 'group_permission_grant' END
    WHEN 'a' THEN CASE WHEN i.group_id IS NULL THEN 'authority_permission' ELSE 'group_authority_permission' END
    WHEN 'm' THEN 'group_membership' ELSE 'device_owner' END`;
const KIND = `CASE i.kind WHEN 'g' THEN 'grant' WHEN 'a' THEN 'authority_permission' WHEN 'm' THEN 'membership' ELSE 'owner' END`;

const ITEM_COLUMNS = `i.id, ${KIND} AS kind, i.user_id, i.group_id, i.device_id, p.code AS permission_code,
  ${DECIDED_BY} AS decided_by, i.authority_id, CASE WHEN i.kind = 'g' THEN i.path_id END AS grant_id,
  CASE WHEN i.kind = 'a' THEN i.path_id END AS authority_permission_id,
  CASE WHEN i.kind = 'm' THEN i.path_id END AS membership_id, u.last_used_at,
  ${RECOMMENDATION} AS recommendation, i.kind <> 'o' AS revocable, i.decision, i.note, i.reviewer_id, i.decided_at`;

export const ACCESS_REVIEW_ITEM_LIST = listSpec({
  from: `access_review_items i JOIN access_reviews r ON r.id = i.review_id
    LEFT JOIN permissions p ON p.id = i.permission_id
    LEFT JOIN access_path_uses u ON u.kind = i.kind AND u.path_id = i.path_id`,
  alias: 'i',
  select: ITEM_COLUMNS,
  sort: ['id'],
  filters: {
    decision: { column: `coalesce(i.decision, 'none')`, type: { enum: [...REVIEW_DECISIONS, 'none'] } },
    device_id: 'int',
    user_id: 'int',
    group_id: 'int',
    kind: { column: `(${KIND})`, type: { enum: REVIEW_ITEM_KINDS } },
    recommendation: { column: `(${RECOMMENDATION})`, type: { enum: REVIEW_DECISIONS } },
  },
});

/** What the snapshot takes: the campaign's scope, resolved to ids (null: no restriction). */
export interface SnapshotScope {
  readonly deviceIds: readonly number[] | null;
  readonly permissionIds: readonly number[] | null;
  readonly userIds: readonly number[] | null;
  /** Only the rights of these groups and memberships in them (no user's own paths). */
  readonly groupIds: readonly number[] | null;
  /** The roles that confer something in scope: a group carrying one makes its members' memberships items. */
  readonly roleIds: readonly number[];
  /** Owner authorities are items unless the scope names only permissions that are not device-scoped. */
  readonly owners: boolean;
}

/** An item as a decision or the close judges it. */
export interface ItemFacts {
  readonly id: number;
  readonly review_id: number;
  readonly kind: 'g' | 'a' | 'o' | 'm';
  readonly path_id: number;
  /** null for a group's right. */
  readonly user_id: number | null;
  /** The group holding the right, or the group of the membership; null for a user's own path. */
  readonly group_id: number | null;
  readonly device_id: number | null;
  readonly permission_id: number | null;
  readonly authority_id: number | null;
  readonly decision: ReviewDecision | null;
  readonly user_role_id: number | null;
  /** Who decided it (null: undecided), and that user's role now (deleted or not). */
  readonly reviewer_id: number | null;
  readonly reviewer_role_id: number | null;
}

export type Outcome = 'revoked' | 'kept' | 'failed';

const LIVE_AUTHORITY = `a.revoked_at IS NULL AND NOT a.is_deleted AND (a.expires_at IS NULL OR a.expires_at > now())`;
const LIVE_USER = 'EXISTS (SELECT 1 FROM users usr WHERE usr.id = a.user_id AND NOT usr.is_deleted)';

const LIVE_GROUP = (column: string): string =>
  `EXISTS (SELECT 1 FROM groups grp WHERE grp.id = ${column} AND NOT grp.is_deleted)`;
const LIVE_AP = '(ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now()))';
const LIVE_GRANT = '(g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now()))';
const LIVE_MEMBERSHIP = '(m.removed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now()))';

/** $2 devices, $3 permissions, $7 roles. */
const CONFERRING = conferringGroups({
  role: (column) => `${column} = ANY($7::int[])`,
  devicesNamed: '$2::bigint[] IS NOT NULL',
  onDevice: (column) => `($2::bigint[] IS NULL OR ${column} = ANY($2))`,
  permitted: (column) => `($3::int[] IS NULL OR ${column} = ANY($3))`,
});

/**
 * The snapshot, in one statement: live authority permissions on live authorities, owner
 * authorities, and live permission grants (unless devices are named), of undeleted users and of
 * live groups, and the live memberships of undeleted users in groups that confer something in
 * scope. Named users keep their own paths and memberships; named groups keep their rights and
 * the memberships in them. Ordered by device then holder, so a device's items are neighbours in
 * id order. $1 review, $2 devices, $3 permissions, $4 users, $5 owners, $6 groups, $7 roles.
 */
const SNAPSHOT = `
  INSERT INTO access_review_items (review_id, kind, path_id, user_id, group_id, device_id, permission_id, authority_id, granted_at)
  WITH RECURSIVE ${CONFERRING}
  SELECT $1, kind, path_id, user_id, group_id, device_id, permission_id, authority_id, granted_at FROM (
    SELECT 'a' AS kind, ap.id AS path_id, a.user_id, a.group_id, a.device_id, ap.permission_id, a.id AS authority_id, ap.granted_at
    FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id
    WHERE ${LIVE_AP} AND ${LIVE_AUTHORITY}
      AND ((a.user_id IS NOT NULL AND $6::bigint[] IS NULL AND ${LIVE_USER} AND ($4::bigint[] IS NULL OR a.user_id = ANY($4)))
        OR (a.group_id IS NOT NULL AND $4::bigint[] IS NULL AND ${LIVE_GROUP('a.group_id')} AND ($6::bigint[] IS NULL OR a.group_id = ANY($6))))
      AND ($2::bigint[] IS NULL OR a.device_id = ANY($2)) AND ($3::int[] IS NULL OR ap.permission_id = ANY($3))
    UNION ALL
    SELECT 'o', a.id, a.user_id, NULL, a.device_id, NULL, a.id, a.created_at
    FROM authorities a
    WHERE $5 AND $6::bigint[] IS NULL AND a.owner AND ${LIVE_AUTHORITY} AND ${LIVE_USER}
      AND ($2::bigint[] IS NULL OR a.device_id = ANY($2)) AND ($4::bigint[] IS NULL OR a.user_id = ANY($4))
    UNION ALL
    SELECT 'g', g.id, g.user_id, g.group_id, NULL, g.permission_id, NULL, g.granted_at
    FROM permission_grants g
    WHERE $2::bigint[] IS NULL AND ${LIVE_GRANT}
      AND ((g.user_id IS NOT NULL AND $6::bigint[] IS NULL AND ($4::bigint[] IS NULL OR g.user_id = ANY($4))
            AND EXISTS (SELECT 1 FROM users usr WHERE usr.id = g.user_id AND NOT usr.is_deleted))
        OR (g.group_id IS NOT NULL AND $4::bigint[] IS NULL AND ${LIVE_GROUP('g.group_id')} AND ($6::bigint[] IS NULL OR g.group_id = ANY($6))))
      AND ($3::int[] IS NULL OR g.permission_id = ANY($3))
    UNION ALL
    SELECT 'm', m.id, m.user_id, m.group_id, NULL, NULL, NULL, m.added_at
    FROM group_memberships m
    WHERE m.user_id IS NOT NULL AND ${LIVE_MEMBERSHIP} AND m.group_id IN (SELECT group_id FROM conferring)
      AND ${LIVE_GROUP('m.group_id')} AND EXISTS (SELECT 1 FROM users usr WHERE usr.id = m.user_id AND NOT usr.is_deleted)
      AND ($4::bigint[] IS NULL OR m.user_id = ANY($4)) AND ($6::bigint[] IS NULL OR m.group_id = ANY($6))
  ) paths
  ORDER BY device_id NULLS FIRST, user_id NULLS LAST, group_id, kind DESC, path_id
  ON CONFLICT (review_id, kind, path_id) DO NOTHING`;

// The user's effective role, for the rank rule on a grant's item (judged at the decision, and again at the
// close: roles may have changed in between), and the reviewer's.
const FACTS = `id, review_id, kind, path_id, user_id, group_id, device_id, permission_id, authority_id, decision, reviewer_id,
  (SELECT ${effectiveRoleSql('usr.id', 'usr.role_id')} FROM users usr WHERE usr.id = access_review_items.user_id) AS user_role_id,
  (SELECT ${effectiveRoleSql('usr.id', 'usr.role_id')} FROM users usr WHERE usr.id = access_review_items.reviewer_id) AS reviewer_role_id`;

/** The items of access reviews: the snapshot, the decisions and the close's outcomes. */
@Injectable()
export class AccessReviewItemsRepository {
  private readonly pages: ListPages;

  constructor(
    private readonly uow: UnitOfWork,
    projections: Projections,
  ) {
    this.pages = new ListPages(projections);
  }

  /** A page of a campaign's items (`devices`: only those on these devices, no grants). */
  list(
    reviewId: number,
    query: Record<string, unknown>,
    devices?: readonly number[],
  ): Promise<ListResponse<AccessReviewItemDto>> {
    const scope: Scope =
      devices === undefined
        ? { where: 'i.review_id = $1', params: [reviewId] }
        : { where: 'i.review_id = $1 AND i.device_id = ANY($2::bigint[])', params: [reviewId, [...devices]] };
    return this.pages.read<AccessReviewItemDto>(ACCESS_REVIEW_ITEM_LIST, query, scope);
  }

  /** Takes the snapshot; answers how many items it holds. */
  async snapshot(tx: Tx, reviewId: number, scope: SnapshotScope): Promise<number> {
    const nullable = (ids: readonly number[] | null): number[] | null => (ids === null ? null : [...ids]);
    // Counted as inserted: the snapshot is taken once, in the transaction that opens the campaign.
    const [row] = await tx.write<{ n: number }[]>(
      ITEMS,
      `WITH taken AS (${SNAPSHOT} RETURNING 1) SELECT count(*)::int AS n FROM taken`,
      [
        reviewId,
        nullable(scope.deviceIds),
        nullable(scope.permissionIds),
        nullable(scope.userIds),
        scope.owners,
        nullable(scope.groupIds),
        [...scope.roleIds],
      ],
    );
    return row?.n ?? 0;
  }

  /** The items a decision names, of any campaign, without locks (for what never changes: device, user, kind). */
  async readFacts(ids: readonly number[]): Promise<ItemFacts[]> {
    return this.uow.reader.query<ItemFacts[]>(`SELECT ${FACTS} FROM access_review_items WHERE id = ANY($1::bigint[])`, [
      [...ids],
    ]);
  }

  /** The items a decision names, of any campaign, under their row locks. */
  async lockFacts(tx: Tx, ids: readonly number[]): Promise<ItemFacts[]> {
    return tx.db.query<ItemFacts[]>(
      `SELECT ${FACTS} FROM access_review_items WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
      [[...ids]],
    );
  }

  /** Records decisions; answers each item's decision before, for the counts. */
  async decide(
    tx: Tx,
    decisions: readonly { readonly id: number; readonly decision: ReviewDecision; readonly note: string | null }[],
    reviewerId: number,
  ): Promise<void> {
    if (decisions.length === 0) return;
    await tx.write(
      ITEMS,
      `UPDATE access_review_items i SET decision = d.decision, note = d.note, reviewer_id = $4, decided_at = now()
       FROM unnest($1::bigint[], $2::text[], $3::text[]) AS d(id, decision, note) WHERE i.id = d.id`,
      [decisions.map((d) => d.id), decisions.map((d) => d.decision), decisions.map((d) => d.note), reviewerId],
    );
  }

  /** The next items the close has not settled, under their row locks. */
  async unsettled(tx: Tx, reviewId: number, limit: number): Promise<ItemFacts[]> {
    return tx.db.query<ItemFacts[]>(
      `SELECT ${FACTS} FROM access_review_items WHERE review_id = $1 AND outcome IS NULL ORDER BY id LIMIT $2 FOR UPDATE`,
      [reviewId, limit],
    );
  }

  async settle(tx: Tx, outcomes: ReadonlyMap<number, Outcome>): Promise<void> {
    if (outcomes.size === 0) return;
    await tx.write(
      ITEMS,
      `UPDATE access_review_items i SET outcome = o.outcome
       FROM unnest($1::bigint[], $2::text[]) AS o(id, outcome) WHERE i.id = o.id`,
      [[...outcomes.keys()], [...outcomes.values()]],
    );
  }

  /** How the close ended: each outcome's count. */
  async outcomes(tx: Tx, reviewId: number): Promise<Record<Outcome, number>> {
    const rows = await tx.db.query<{ outcome: Outcome; n: number }[]>(
      `SELECT outcome, count(*)::int AS n FROM access_review_items WHERE review_id = $1 AND outcome IS NOT NULL GROUP BY outcome`,
      [reviewId],
    );
    const counted = { revoked: 0, kept: 0, failed: 0 };
    for (const row of rows) counted[row.outcome] = row.n;
    return counted;
  }

  /**
   * Who may be told of a campaign: active users whose effective role (its own, or a group's) has
   * admin access (`adminRoleIds`: a member's every admin call is 403, whatever it holds), after
   * `after` in id order, allowed `access_reviews.decide` by an admin role (`roleIds`) or a live
   * grant (`decideId`, its own or a group's), or holding a live, active authority (an inactive one
   * allows nothing: part 5), its own or a group's, on a device of its items that is the owner's or
   * carries the permission.
   */
  async reviewers(
    reviewId: number,
    roleIds: readonly number[],
    decideId: number,
    activeId: number,
    after: number,
    limit: number,
    adminRoleIds: readonly number[],
  ): Promise<number[]> {
    const rows = await this.uow.reader.query<{ id: string }[]>(
      // The user's groups are read once (one recursion), for its effective role and what they hold.
      `SELECT usr.id FROM users usr
       CROSS JOIN LATERAL (SELECT coalesce(array_agg(c.group_id), '{}') AS ids, least(usr.role_id, min(c.role_id)) AS role_id
                           FROM (${userGroupChains('usr.id')}) c) ug
       WHERE NOT usr.is_deleted AND usr.status_id = $4 AND usr.id > $5 AND ug.role_id = ANY($7::int[])
         AND (ug.role_id = ANY($2::int[])
              OR EXISTS (SELECT 1 FROM permission_grants g WHERE g.user_id = usr.id AND g.permission_id = $3 AND ${LIVE_GRANT})
              OR EXISTS (SELECT 1 FROM permission_grants g WHERE g.group_id = ANY(ug.ids) AND g.permission_id = $3 AND ${LIVE_GRANT})
              OR EXISTS (SELECT 1 FROM authorities a
                         WHERE (a.user_id = usr.id OR a.group_id = ANY(ug.ids))
                           AND ${LIVE_AUTHORITY} AND a.is_active
                           AND a.device_id IN (SELECT device_id FROM access_review_items WHERE review_id = $1 AND device_id IS NOT NULL)
                           AND (a.owner OR EXISTS (SELECT 1 FROM authority_permissions ap WHERE ap.authority_id = a.id
                                  AND ap.permission_id = $3 AND ${LIVE_AP}))))
       ORDER BY usr.id LIMIT $6`,
      [reviewId, [...roleIds], decideId, activeId, after, limit, [...adminRoleIds]],
    );
    return rows.map((row) => Number(row.id));
  }
}
