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

  /**
   * A page and the capped total. Narrowed to a device, the matching paths are few enough to gather
   * from the device's authorities and sort (walking the granted-at index for them could pass most
   * of a million paths first); otherwise each kind streams in index order, a user's from the index
   * of its holder's live rows by granted-at (migration `authority-permission-holders`).
   * `count`: `capped` counts up to the cap (one past it means "more"), `exact` counts every path
   * (`count=exact`, part 2), `none` skips the count (the caller knows it is past the cap: `total`
   * is then -1).
   */
  async page(
    filter: FindingsFilter,
    direction: 'asc' | 'desc',
    offset: number,
    limit: number,
    count: 'capped' | 'exact' | 'none' = 'capped',
  ): Promise<{ rows: FindingRow[]; total: number }> {
    const dir = direction === 'asc' ? 'ASC' : 'DESC';
    const order =
      direction === 'asc' ? 'granted_at, decided_by DESC, path_id' : 'granted_at DESC, decided_by, path_id DESC';
    const params = [filter.cutoff, filter.deviceId, filter.userId, filter.permissionId];
    if (filter.deviceId !== null) {
      const rows = await this.uow.reader.query<(FindingRow & { total: string })[]>(
        `WITH paths AS MATERIALIZED ((${GRANTS}) UNION ALL (${AUTHORITY_PERMISSIONS}))
         SELECT *, (SELECT count(*) FROM paths) AS total FROM paths ORDER BY ${order} LIMIT $5 OFFSET $6`,
        [...params, limit, offset],
      );
      if (rows.length > 0) return { rows, total: Number(rows[0]?.total) };
      const [counted] = await this.uow.reader.query<{ n: string }[]>(
        `SELECT count(*) AS n FROM ((${GRANTS}) UNION ALL (${AUTHORITY_PERMISSIONS})) paths`,
        params,
      );
      return { rows, total: Number(counted?.n ?? 0) };
    }
    // Each kind's first offset + limit paths in the page's order, from its own granted-at index
    // (the top of the merged order is among them), then merged: a page never sorts the whole set.
    const top = (alias: string): string => `ORDER BY ${alias}.granted_at ${dir}, ${alias}.id ${dir} LIMIT $5`;
    const [rows, counted] = await Promise.all([
      this.uow.reader.query<FindingRow[]>(
        `SELECT * FROM ((${GRANTS} ${top('g')}) UNION ALL (${AUTHORITY_PERMISSIONS} ${top('ap')})) paths
         ORDER BY ${order} LIMIT $6 OFFSET $7`,
        [...params, offset + limit, limit, offset],
      ),
      count === 'none'
        ? Promise.resolve([{ n: '-1' }])
        : count === 'exact'
          ? this.uow.reader.query<{ n: string }[]>(
              `SELECT count(*) AS n FROM ((${GRANTS}) UNION ALL (${AUTHORITY_PERMISSIONS})) c`,
              params,
            )
          : this.uow.reader.query<{ n: string }[]>(
              `SELECT count(*) AS n FROM ((${GRANTS} LIMIT $5) UNION ALL (${AUTHORITY_PERMISSIONS} LIMIT $5) LIMIT $5) c`,
              [...params, EXACT_UP_TO + 1],
            ),
    ]);
    return { rows, total: Number(counted[0]?.n ?? 0) };
  }
}

export { EXACT_UP_TO };

// $1 cutoff, $2 device, $3 user, $4 permission. A path counts as unused when it has no use at or
// after the cutoff: an anti-join on the uses' key, so each branch streams in its index's order
// and stops at the page (a join on the uses made the planner sort every live path instead).
const GRANTS = `
  SELECT g.user_id, NULL::bigint AS device_id, g.permission_id, 'permission_grant' AS decided_by,
         NULL::bigint AS authority_id, g.id AS grant_id, NULL::bigint AS authority_permission_id, g.granted_at,
         (SELECT u.last_used_at FROM access_path_uses u WHERE u.kind = 'g' AND u.path_id = g.id) AS last_used_at,
         g.id AS path_id
  FROM permission_grants g
  WHERE $2::bigint IS NULL AND g.user_id IS NOT NULL AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now())
    AND ($3::bigint IS NULL OR g.user_id = $3) AND ($4::int IS NULL OR g.permission_id = $4)
    AND NOT EXISTS (SELECT 1 FROM access_path_uses u WHERE u.kind = 'g' AND u.path_id = g.id AND u.last_used_at >= $1)`;

const AUTHORITY_PERMISSIONS = `
  SELECT a.user_id, a.device_id, ap.permission_id, 'authority_permission', a.id, NULL::bigint, ap.id, ap.granted_at,
         (SELECT u.last_used_at FROM access_path_uses u WHERE u.kind = 'a' AND u.path_id = ap.id), ap.id
  FROM authority_permissions ap
  JOIN authorities a ON a.id = ap.authority_id
  WHERE ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now())
    AND a.revoked_at IS NULL AND NOT a.is_deleted AND (a.expires_at IS NULL OR a.expires_at > now())
    AND ($2::bigint IS NULL OR a.device_id = $2) AND ($3::bigint IS NULL OR ap.user_id = $3)
    AND ($4::int IS NULL OR ap.permission_id = $4)
    AND NOT EXISTS (SELECT 1 FROM access_path_uses u WHERE u.kind = 'a' AND u.path_id = ap.id AND u.last_used_at >= $1)
`;
