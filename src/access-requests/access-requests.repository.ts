import { Injectable } from '@nestjs/common';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import type { Scope } from '../platform/http/list/list-sql.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { table } from '../platform/database/table.js';
import { ACCESS_REQUEST_STATES, type AccessRequestDto } from './dto/access-request.dto.js';

export interface AccessRequestRow extends AccessRequestDto {
  readonly version: number;
}

/**
 * The state as the API shows it: a pending request whose `expires_at` has passed is `expired`
 * from that instant, before the expiry job has recorded it (the stored row keeps its version
 * until then; the job's write is the next version).
 */
// The clock, not the transaction's start: a decision that waited for the row's lock past the
// expiry reads the request as expired, as every reader does by then.
const STATE = `CASE WHEN state = 'pending' AND expires_at <= clock_timestamp() THEN 'expired' ELSE state END`;

const RESOURCE_COLUMNS = `id, requester_id, device_id, authority_id, permission_id, permission_code, reason, duration_seconds,
  ${STATE} AS state, expires_at, decided_by, decided_at, decision_reason, authority_permission_id, access_expires_at,
  array_to_json(approvers) AS approvers, created_at, updated_at, created_by, updated_by`;

export const ACCESS_REQUEST_LIST = listSpec({
  from: 'access_requests',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'created_at'],
  defaultSort: 'id:desc',
  filters: {
    state: { column: `(${STATE})`, type: { enum: ACCESS_REQUEST_STATES } },
    requester_id: 'int',
    device_id: 'int',
    permission_id: 'int',
  },
  // A cached page that shows a pending request is good only until its expiry.
  changesAt: 'expires_at',
});

const ACCESS_REQUESTS = table('access_requests', { columns: RESOURCE_COLUMNS, list: ACCESS_REQUEST_LIST });

/** The columns an access request write may set. */
type AccessRequestColumn =
  | 'requester_id'
  | 'device_id'
  | 'authority_id'
  | 'permission_id'
  | 'permission_code'
  | 'reason'
  | 'duration_seconds'
  | 'state'
  | 'expires_at'
  | 'decided_by'
  | 'decided_at'
  | 'decision_reason'
  | 'authority_permission_id'
  | 'access_expires_at'
  | 'approvers'
  | 'created_by'
  | 'updated_by';

/** Which devices (every permission) and (device, permission) pairs an actor may decide, for row filtering. */
export interface DecidablePairs {
  readonly whole_device_ids: number[];
  readonly device_ids: number[];
  readonly permission_ids: number[];
}

/** Row access for access requests (part 6.15). */
@Injectable()
export class AccessRequestsRepository extends ResourceTable<AccessRequestRow, AccessRequestColumn> {
  constructor(uow: UnitOfWork, projections: Projections) {
    super({ table: ACCESS_REQUESTS, type: 'access_request', notFound: 'ACCESS_REQUEST_NOT_FOUND' }, uow, projections);
  }

  /** The rows an actor without the global right to decide sees: its own, and those it may decide. */
  visibleTo(userId: number, decidable: DecidablePairs): Scope {
    return {
      where: `requester_id = $1 OR device_id = ANY($4::bigint[])
        OR (device_id, permission_id) IN (SELECT * FROM unnest($2::bigint[], $3::int[]))`,
      params: [userId, [...decidable.device_ids], [...decidable.permission_ids], [...decidable.whole_device_ids]],
    };
  }

  /**
   * Who might approve a request on the device: active, undeleted users other than the requester
   * whose role holds the right (`roleIds`), who hold a live grant of it (`approveId`), or who hold
   * a live authority on the device. Only narrows: the evaluator judges each.
   */
  /**
   * Whether the request's pending expiry has passed by the clock of now. Asked once its row lock is
   * held: a locking read's columns are worked out before it waits for the lock.
   */
  async lapsed(tx: Tx, id: number): Promise<boolean> {
    const [row] = await tx.db.query<{ lapsed: boolean }[]>(
      'SELECT expires_at <= clock_timestamp() AS lapsed FROM access_requests WHERE id = $1',
      [id],
    );
    return row?.lapsed === true;
  }

  async approverCandidates(query: {
    readonly requesterId: number;
    readonly deviceId: number;
    readonly roleIds: readonly number[];
    readonly approveId: number;
    readonly activeStatusId: number;
  }): Promise<number[]> {
    const rows = await this.uow.reader.query<{ id: number }[]>(
      `SELECT u.id FROM users u
       WHERE NOT u.is_deleted AND u.status_id = $5 AND u.id <> $1
         AND (u.role_id = ANY($3::int[])
              OR EXISTS (SELECT 1 FROM permission_grants g WHERE g.user_id = u.id AND g.permission_id = $4
                           AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now()))
              OR EXISTS (SELECT 1 FROM authorities a WHERE a.user_id = u.id AND a.device_id = $2
                           AND NOT a.is_deleted AND a.revoked_at IS NULL AND a.is_active))
       ORDER BY u.id`,
      [query.requesterId, query.deviceId, [...query.roleIds], query.approveId, query.activeStatusId],
    );
    return rows.map((row) => Number(row.id));
  }

  /**
   * Records `expired` on pending requests whose expiry has passed: up to `limit` of them (or only
   * that of one requester, device and permission), skipping rows another transaction holds (a
   * decision in progress settles them). Answers the rows it changed.
   */
  async expireDue(
    tx: Tx,
    limit: number,
    only?: { readonly requester_id: number; readonly device_id: number; readonly permission_id: number },
  ): Promise<AccessRequestRow[]> {
    const narrow = only === undefined ? '' : 'AND requester_id = $2 AND device_id = $3 AND permission_id = $4';
    const [rows] = await tx.write<[AccessRequestRow[], number]>(
      ACCESS_REQUESTS,
      `UPDATE access_requests SET state = 'expired', decided_at = expires_at, updated_by = NULL
       WHERE id IN (SELECT id FROM access_requests WHERE state = 'pending' AND expires_at <= now() ${narrow}
                    ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING ${ACCESS_REQUESTS.selected}`,
      only === undefined ? [limit] : [limit, only.requester_id, only.device_id, only.permission_id],
    );
    await this.changed(tx, rows);
    return rows;
  }
}
