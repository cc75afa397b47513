import { Injectable } from '@nestjs/common';
import { table } from '../platform/database/table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { Projections } from '../platform/projections/projections.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { ACCESS_REVIEW_STATES, type AccessReviewDto } from './dto/access-review.dto.js';

export interface AccessReviewRow extends AccessReviewDto {
  readonly version: number;
}

/** What the jobs need beyond the resource: the recommendation rule and where the notices are. */
export interface ReviewProgress {
  readonly id: number;
  readonly name: string;
  readonly state: AccessReviewDto['state'];
  readonly default_decision: AccessReviewDto['default_decision'];
  readonly scope: AccessReviewDto['scope'];
  readonly due_at: Date;
  readonly open_notices_through: string;
  readonly open_notices_done: boolean;
  readonly due_notices_through: string;
  readonly due_notices_done: boolean;
}

// json (not jsonb) objects keep their keys in the contract's order.
const RESOURCE_COLUMNS = `id, name,
  json_strip_nulls(json_build_object('device_ids', scope->'device_ids', 'permission_codes', scope->'permission_codes',
    'user_ids', scope->'user_ids')) AS scope,
  default_decision, due_at, state,
  json_build_object('items', item_count, 'decided', keep_count + revoke_count, 'keep', keep_count,
    'revoke', revoke_count, 'undecided', item_count - keep_count - revoke_count) AS counts,
  CASE WHEN result IS NOT NULL THEN json_build_object('revoked', (result->>'revoked')::int,
    'kept', (result->>'kept')::int, 'failed', (result->>'failed')::int) END AS result,
  job_id, created_at, updated_at, created_by, updated_by`;

export const ACCESS_REVIEW_LIST = listSpec({
  from: 'access_reviews',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'created_at', 'due_at'],
  defaultSort: 'id:desc',
  filters: { state: { enum: ACCESS_REVIEW_STATES } },
});

export const ACCESS_REVIEWS = table('access_reviews', { columns: RESOURCE_COLUMNS, list: ACCESS_REVIEW_LIST });

const PROGRESS = `SELECT id, name, state, default_decision, scope, due_at, open_notices_through, open_notices_done,
    due_notices_through, due_notices_done FROM access_reviews WHERE id = $1`;

type AccessReviewColumn =
  | 'name'
  | 'scope'
  | 'default_decision'
  | 'due_at'
  | 'state'
  | 'unused_days'
  | 'item_count'
  | 'result'
  | 'job_id'
  | 'opened_at'
  | 'closed_at'
  | 'open_notices_through'
  | 'open_notices_done'
  | 'due_notices_through'
  | 'due_notices_done'
  | 'created_by'
  | 'updated_by';

/** Campaigns of access reviews (part 6.16); their items are in `AccessReviewItemsRepository`. */
@Injectable()
export class AccessReviewsRepository extends ResourceTable<AccessReviewRow, AccessReviewColumn> {
  constructor(uow: UnitOfWork, projections: Projections) {
    super({ table: ACCESS_REVIEWS, type: 'access_review', notFound: 'ACCESS_REVIEW_NOT_FOUND' }, uow, projections);
  }

  /** The campaign's progress under its row lock (undefined: it does not exist). */
  async progress(tx: Tx, id: number): Promise<ReviewProgress | undefined> {
    const [row] = await tx.db.query<ReviewProgress[]>(`${PROGRESS} FOR UPDATE`, [id]);
    return row;
  }

  /** The campaign's progress as it reads now, without a lock. */
  async peek(id: number): Promise<ReviewProgress | undefined> {
    const [row] = await this.uow.reader.query<ReviewProgress[]>(PROGRESS, [id]);
    return row;
  }

  /** The smallest of `ids` naming no device (or no undeleted user), if any: a scope's 404. */
  async firstMissing(kind: 'device' | 'user' | 'group', ids: readonly number[]): Promise<number | undefined> {
    const exists = {
      device: 'SELECT 1 FROM devices d WHERE d.id = x',
      user: 'SELECT 1 FROM users usr WHERE usr.id = x AND NOT usr.is_deleted',
      group: 'SELECT 1 FROM groups grp WHERE grp.id = x AND NOT grp.is_deleted',
    }[kind];
    const [row] = await this.uow.reader.query<{ id: number | null }[]>(
      `SELECT min(x) AS id FROM unnest($1::bigint[]) AS x WHERE NOT EXISTS (${exists})`,
      [[...ids]],
    );
    return row?.id ?? undefined;
  }

  /** Adds decisions' net changes to the counts (under the campaign's lock, which the caller holds). */
  async count(tx: Tx, id: number, keep: number, revoke: number): Promise<AccessReviewRow> {
    const [rows] = await tx.write<[AccessReviewRow[], number]>(
      ACCESS_REVIEWS,
      `UPDATE access_reviews SET keep_count = keep_count + $2, revoke_count = revoke_count + $3, updated_by = $4
       WHERE id = $1 RETURNING ${ACCESS_REVIEWS.selected}`,
      [id, keep, revoke, tx.actor],
    );
    const row = rows[0];
    if (row === undefined) throw new Error(`access review ${id} vanished under its lock`);
    await this.changed(tx, [row]);
    return row;
  }

  /** Open campaigns whose notices are not all sent: opening ones, and those due within `dueWithinHours`. */
  async withNoticesDue(dueWithinHours: number): Promise<number[]> {
    const rows = await this.uow.reader.query<{ id: string }[]>(
      `SELECT id FROM access_reviews WHERE state = 'open' AND NOT open_notices_done
       UNION SELECT id FROM access_reviews
       WHERE state = 'open' AND NOT due_notices_done AND due_at <= now() + make_interval(hours => $1)
       ORDER BY id`,
      [dueWithinHours],
    );
    return rows.map((row) => Number(row.id));
  }
}
