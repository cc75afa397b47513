import { Injectable } from '@nestjs/common';
import { UnitOfWork } from '../platform/database/unit-of-work.js';

export interface FindingsFilter {
  readonly cutoff: Date;
  readonly deviceId: number | null;
  readonly userId: number | null;
  readonly permissionId: number | null;
}

export interface FindingRow {
  readonly user_id: string;
  readonly device_id: string | null;
  readonly permission_id: number;
  readonly decided_by: 'permission_grant' | 'authority_permission';
  readonly authority_id: string | null;
  readonly grant_id: string | null;
  readonly authority_permission_id: string | null;
  readonly granted_at: Date;
  readonly last_used_at: Date | null;
}

/** Counted exactly up to this many; beyond, `total_exact` is false (part 2). */
const EXACT_UP_TO = 10_000;

/**
 * Revocable paths not used since a cutoff (part 6.16): live permission grants, and live authority
 * permissions on effective authorities (not revoked, deleted or expired), each with its last use
 * (migration `access-path-uses`). Ordered by when they were granted, oldest first (grants before
 * authority permissions granted in the same instant, then by id), so a page is read from the
 * granted-at indexes without sorting the whole set.
 */
@Injectable()
export class AccessFindingsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  async page(
    filter: FindingsFilter,
    direction: 'asc' | 'desc',
    offset: number,
    limit: number,
  ): Promise<{ rows: FindingRow[]; total: number }> {
    const order =
      direction === 'asc' ? 'granted_at, decided_by DESC, path_id' : 'granted_at DESC, decided_by, path_id DESC';
    const params = [filter.cutoff, filter.deviceId, filter.userId, filter.permissionId];
    const [rows, counted] = await Promise.all([
      this.uow.reader.query<FindingRow[]>(`${PATHS} SELECT * FROM paths ORDER BY ${order} LIMIT $5 OFFSET $6`, [
        ...params,
        limit,
        offset,
      ]),
      this.uow.reader.query<{ n: string }[]>(`${PATHS} SELECT count(*) AS n FROM (SELECT 1 FROM paths LIMIT $5) c`, [
        ...params,
        EXACT_UP_TO + 1,
      ]),
    ]);
    return { rows, total: Number(counted[0]?.n ?? 0) };
  }
}

export { EXACT_UP_TO };

// $1 cutoff, $2 device, $3 user, $4 permission. A path counts as unused when its last use is
// before the cutoff or it has none.
const PATHS = `WITH paths AS (
  SELECT g.user_id, NULL::bigint AS device_id, g.permission_id, 'permission_grant' AS decided_by,
         NULL::bigint AS authority_id, g.id AS grant_id, NULL::bigint AS authority_permission_id,
         g.granted_at, u.last_used_at, g.id AS path_id
  FROM permission_grants g
  LEFT JOIN access_path_uses u ON u.kind = 'g' AND u.path_id = g.id
  WHERE $2::bigint IS NULL AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now())
    AND ($3::bigint IS NULL OR g.user_id = $3) AND ($4::int IS NULL OR g.permission_id = $4)
    AND (u.last_used_at IS NULL OR u.last_used_at < $1)
  UNION ALL
  SELECT a.user_id, a.device_id, ap.permission_id, 'authority_permission',
         a.id, NULL::bigint, ap.id, ap.granted_at, u.last_used_at, ap.id
  FROM authority_permissions ap
  JOIN authorities a ON a.id = ap.authority_id
  LEFT JOIN access_path_uses u ON u.kind = 'a' AND u.path_id = ap.id
  WHERE ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now())
    AND a.revoked_at IS NULL AND NOT a.is_deleted AND (a.expires_at IS NULL OR a.expires_at > now())
    AND ($2::bigint IS NULL OR a.device_id = $2) AND ($3::bigint IS NULL OR a.user_id = $3)
    AND ($4::int IS NULL OR ap.permission_id = $4)
    AND (u.last_used_at IS NULL OR u.last_used_at < $1)
)`;
