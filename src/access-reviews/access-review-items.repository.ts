import { Injectable } from '@nestjs/common';
import { table } from '../platform/database/table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import type { Scope } from '../platform/http/list/list-sql.js';
import { ListPages } from '../platform/projections/list-pages.js';
import { Projections } from '../platform/projections/projections.js';
import type { ListResponse } from '../platform/http/responses.js';
import { REVIEW_DECISIONS, type AccessReviewItemDto, type ReviewDecision } from './dto/access-review.dto.js';

const ITEMS = table('access_review_items');

/** `revoke` when the path has no use within the campaign's UNUSED_ACCESS_DAYS (never used included), as the findings judge. */
const RECOMMENDATION = `CASE WHEN i.kind <> 'o' AND (u.last_used_at IS NULL
  OR u.last_used_at < now() - make_interval(days => r.unused_days)) THEN 'revoke' ELSE 'keep' END`;

const ITEM_COLUMNS = `i.id, i.user_id, i.device_id, p.code AS permission_code,
  CASE i.kind WHEN 'g' THEN 'permission_grant' WHEN 'a' THEN 'authority_permission' ELSE 'device_owner' END AS decided_by,
  i.authority_id, CASE WHEN i.kind = 'g' THEN i.path_id END AS grant_id,
  CASE WHEN i.kind = 'a' THEN i.path_id END AS authority_permission_id, u.last_used_at,
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
    recommendation: { column: `(${RECOMMENDATION})`, type: { enum: REVIEW_DECISIONS } },
  },
});

/** What the snapshot takes: the campaign's scope, resolved to ids (null: no restriction). */
export interface SnapshotScope {
  readonly deviceIds: readonly number[] | null;
  readonly permissionIds: readonly number[] | null;
  readonly userIds: readonly number[] | null;
  /** Owner authorities are items unless the scope names only permissions that are not device-scoped. */
  readonly owners: boolean;
}

/** An item as a decision or the close judges it. */
export interface ItemFacts {
  readonly id: number;
  readonly review_id: number;
  readonly kind: 'g' | 'a' | 'o';
  readonly path_id: number;
  readonly user_id: number;
  readonly device_id: number | null;
  readonly permission_id: number | null;
  readonly authority_id: number | null;
  readonly decision: ReviewDecision | null;
  readonly user_role_id: number;
  /** Who decided it (null: undecided), and that user's role now (deleted or not). */
  readonly reviewer_id: number | null;
  readonly reviewer_role_id: number | null;
}

export type Outcome = 'revoked' | 'kept' | 'failed';

const LIVE_AUTHORITY = `a.revoked_at IS NULL AND NOT a.is_deleted AND (a.expires_at IS NULL OR a.expires_at > now())`;
const LIVE_USER = 'EXISTS (SELECT 1 FROM users usr WHERE usr.id = a.user_id AND NOT usr.is_deleted)';

/**
 * The snapshot, in one statement: live authority permissions on live authorities, owner
 * authorities, and live permission grants (unless devices are named), of undeleted users.
 * Ordered by device then user, so a device's items are neighbours in id order.
 * $1 review, $2 devices, $3 permissions, $4 users, $5 owners.
 */
const SNAPSHOT = `
  INSERT INTO access_review_items (review_id, kind, path_id, user_id, device_id, permission_id, authority_id, granted_at)
  SELECT $1, kind, path_id, user_id, device_id, permission_id, authority_id, granted_at FROM (
    SELECT 'a' AS kind, ap.id AS path_id, a.user_id, a.device_id, ap.permission_id, a.id AS authority_id, ap.granted_at
    FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id
    WHERE ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now()) AND ${LIVE_AUTHORITY} AND ${LIVE_USER}
      AND ($2::bigint[] IS NULL OR a.device_id = ANY($2)) AND ($3::int[] IS NULL OR ap.permission_id = ANY($3))
      AND ($4::bigint[] IS NULL OR a.user_id = ANY($4))
    UNION ALL
    SELECT 'o', a.id, a.user_id, a.device_id, NULL, a.id, a.created_at
    FROM authorities a
    WHERE $5 AND a.owner AND ${LIVE_AUTHORITY} AND ${LIVE_USER}
      AND ($2::bigint[] IS NULL OR a.device_id = ANY($2)) AND ($4::bigint[] IS NULL OR a.user_id = ANY($4))
    UNION ALL
    SELECT 'g', g.id, g.user_id, NULL, g.permission_id, NULL, g.granted_at
    FROM permission_grants g
    WHERE $2::bigint[] IS NULL AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now())
      AND EXISTS (SELECT 1 FROM users usr WHERE usr.id = g.user_id AND NOT usr.is_deleted)
      AND ($3::int[] IS NULL OR g.permission_id = ANY($3)) AND ($4::bigint[] IS NULL OR g.user_id = ANY($4))
  ) paths
  ORDER BY device_id NULLS FIRST, user_id, kind DESC, path_id
  ON CONFLICT (review_id, kind, path_id) DO NOTHING`;

// The user's role, for the rank rule on a grant's item (judged at the decision, and again at the
// close: roles may have changed in between), and the reviewer's.
const FACTS = `id, review_id, kind, path_id, user_id, device_id, permission_id, authority_id, decision, reviewer_id,
  (SELECT usr.role_id FROM users usr WHERE usr.id = access_review_items.user_id) AS user_role_id,
  (SELECT usr.role_id FROM users usr WHERE usr.id = access_review_items.reviewer_id) AS reviewer_role_id`;

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
      [reviewId, nullable(scope.deviceIds), nullable(scope.permissionIds), nullable(scope.userIds), scope.owners],
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
   * Who may be told of a campaign: active users of a role with admin access (`adminRoleIds`: a
   * member's every admin call is 403, whatever it holds), after `after` in id order, allowed
   * `access_reviews.decide` by an admin role (`roleIds`) or a live grant (`decideId`), or holding
   * a live, active authority (an inactive one allows nothing: part 5) on a device of its items
   * that is the owner's or carries the permission.
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
      `SELECT usr.id FROM users usr
       WHERE NOT usr.is_deleted AND usr.status_id = $4 AND usr.id > $5 AND usr.role_id = ANY($7::int[])
         AND (usr.role_id = ANY($2::int[])
              OR EXISTS (SELECT 1 FROM permission_grants g WHERE g.user_id = usr.id AND g.permission_id = $3
                           AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now()))
              OR EXISTS (SELECT 1 FROM authorities a
                         WHERE a.user_id = usr.id AND ${LIVE_AUTHORITY} AND a.is_active
                           AND a.device_id IN (SELECT device_id FROM access_review_items WHERE review_id = $1 AND device_id IS NOT NULL)
                           AND (a.owner OR EXISTS (SELECT 1 FROM authority_permissions ap WHERE ap.authority_id = a.id
                                  AND ap.permission_id = $3 AND ap.revoked_at IS NULL
                                  AND (ap.expires_at IS NULL OR ap.expires_at > now())))))
       ORDER BY usr.id LIMIT $6`,
      [reviewId, [...roleIds], decideId, activeId, after, limit, [...adminRoleIds]],
    );
    return rows.map((row) => Number(row.id));
  }
}
