import { Injectable } from '@nestjs/common';
import { conferringGroups } from './conferring-groups.repository.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';

export interface FindingsFilter {
  readonly cutoff: Date;
  readonly deviceId: number | null;
  readonly userId: number | null;
  readonly permissionId: number | null;
  readonly groupId: number | null;
}

export interface FindingRow {
  readonly user_id: string | null;
  readonly group_id: string | null;
  readonly device_id: string | null;
  readonly permission_id: number | null;
  readonly decided_by:
    | 'permission_grant'
    | 'group_permission_grant'
    | 'authority_permission'
    | 'group_authority_permission'
    | 'group_membership';
  readonly authority_id: string | null;
  readonly grant_id: string | null;
  readonly authority_permission_id: string | null;
  readonly membership_id: string | null;
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
    const params = [filter.cutoff, filter.deviceId, filter.userId, filter.permissionId, filter.groupId];
    const all = BRANCHES.map((branch) => `(${branch.text})`).join(' UNION ALL ');
    if (filter.deviceId !== null) {
      const rows = await this.uow.reader.query<(FindingRow & { total: string })[]>(
        `WITH paths AS MATERIALIZED (${all})
         SELECT *, (SELECT count(*) FROM paths) AS total FROM paths ORDER BY ${order} LIMIT $6 OFFSET $7`,
        [...params, limit, offset],
      );
      if (rows.length > 0) return { rows, total: Number(rows[0]?.total) };
      const [counted] = await this.uow.reader.query<{ n: string }[]>(
        `SELECT count(*) AS n FROM (${all}) paths`,
        params,
      );
      return { rows, total: Number(counted?.n ?? 0) };
    }
    // Each kind's first offset + limit paths in the page's order, from its own granted-at index
    // (the top of the merged order is among them), then merged: a page never sorts the whole set.
    const tops = BRANCHES.map(
      (branch) => `(${branch.text} ORDER BY ${branch.alias}.${branch.at} ${dir}, ${branch.alias}.id ${dir} LIMIT $6)`,
    ).join(' UNION ALL ');
    const capped = BRANCHES.map((branch) => `(${branch.text} LIMIT $6)`).join(' UNION ALL ');
    const [rows, counted] = await Promise.all([
      this.uow.reader.query<FindingRow[]>(`SELECT * FROM (${tops}) paths ORDER BY ${order} LIMIT $7 OFFSET $8`, [
        ...params,
        offset + limit,
        limit,
        offset,
      ]),
      count === 'none'
        ? Promise.resolve([{ n: '-1' }])
        : count === 'exact'
          ? this.uow.reader.query<{ n: string }[]>(`SELECT count(*) AS n FROM (${all}) c`, params)
          : this.uow.reader.query<{ n: string }[]>(`SELECT count(*) AS n FROM (${capped} LIMIT $6) c`, [
              ...params,
              EXACT_UP_TO + 1,
            ]),
    ]);
    return { rows, total: Number(counted[0]?.n ?? 0) };
  }
}

export { EXACT_UP_TO };

// $1 cutoff, $2 device, $3 user, $4 permission, $5 group. A path counts as unused when it has no
// use at or after the cutoff: an anti-join on the uses' key, so each branch streams in its index's
// order and stops at the page (a join on the uses made the planner sort every live path instead).
// A named user keeps its own paths and its memberships; a named group its rights and the
// memberships in it.
const USED = (kind: string, path: string): string =>
  `NOT EXISTS (SELECT 1 FROM access_path_uses u WHERE u.kind = '${kind}' AND u.path_id = ${path} AND u.last_used_at >= $1)`;
const LAST_USE = (kind: string, path: string): string =>
  `(SELECT u.last_used_at FROM access_path_uses u WHERE u.kind = '${kind}' AND u.path_id = ${path})`;
const LIVE_GROUP = (column: string): string =>
  `EXISTS (SELECT 1 FROM groups grp WHERE grp.id = ${column} AND NOT grp.is_deleted)`;
const LIVE_AUTHORITY = 'a.revoked_at IS NULL AND NOT a.is_deleted AND (a.expires_at IS NULL OR a.expires_at > now())';

function grants(group: boolean): string {
  return `
  SELECT g.user_id, g.group_id, NULL::bigint AS device_id, g.permission_id,
         '${group ? 'group_permission_grant' : 'permission_grant'}' AS decided_by,
         NULL::bigint AS authority_id, g.id AS grant_id, NULL::bigint AS authority_permission_id,
         NULL::bigint AS membership_id, g.granted_at, ${LAST_USE('g', 'g.id')} AS last_used_at, g.id AS path_id
  FROM permission_grants g
  WHERE $2::bigint IS NULL AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now())
    AND ${
      group
        ? `g.group_id IS NOT NULL AND $3::bigint IS NULL AND ($5::bigint IS NULL OR g.group_id = $5) AND ${LIVE_GROUP('g.group_id')}`
        : 'g.user_id IS NOT NULL AND $5::bigint IS NULL AND ($3::bigint IS NULL OR g.user_id = $3)'
    }
    AND ($4::int IS NULL OR g.permission_id = $4) AND ${USED('g', 'g.id')}`;
}

function authorityPermissions(group: boolean): string {
  return `
  SELECT a.user_id, a.group_id, a.device_id, ap.permission_id,
         '${group ? 'group_authority_permission' : 'authority_permission'}', a.id, NULL::bigint, ap.id, NULL::bigint,
         ap.granted_at, ${LAST_USE('a', 'ap.id')}, ap.id
  FROM authority_permissions ap
  JOIN authorities a ON a.id = ap.authority_id
  WHERE ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now()) AND ${LIVE_AUTHORITY}
    AND ${
      group
        ? `ap.group_id IS NOT NULL AND $3::bigint IS NULL AND ($5::bigint IS NULL OR ap.group_id = $5) AND ${LIVE_GROUP('ap.group_id')}`
        : 'ap.user_id IS NOT NULL AND $5::bigint IS NULL AND ($3::bigint IS NULL OR ap.user_id = $3)'
    }
    AND ($2::bigint IS NULL OR a.device_id = $2) AND ($4::int IS NULL OR ap.permission_id = $4)
    AND ${USED('a', 'ap.id')}`;
}

/**
 * Live memberships of undeleted users in live groups that confer a revocable right (a live grant,
 * or a live authority permission on a live authority, of the group or of a group above it), none
 * of which the member has used through that membership since the cutoff. A group that confers
 * only a role is left out: a role's uses are not recorded (part 6.16), so it would always read as
 * unused.
 */
const MEMBERSHIPS = `
  WITH RECURSIVE ${conferringGroups({
    devicesNamed: '$2::bigint IS NOT NULL',
    onDevice: (column) => `($2::bigint IS NULL OR ${column} = $2)`,
    permitted: (column) => `($4::int IS NULL OR ${column} = $4)`,
  })}
  SELECT m.user_id, m.group_id, NULL::bigint, NULL::int, 'group_membership', NULL::bigint, NULL::bigint, NULL::bigint,
         m.id, m.added_at, ${LAST_USE('m', 'm.id')}, m.id
  FROM group_memberships m
  WHERE m.user_id IS NOT NULL AND m.removed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
    AND m.group_id IN (SELECT group_id FROM conferring) AND ${LIVE_GROUP('m.group_id')}
    AND EXISTS (SELECT 1 FROM users usr WHERE usr.id = m.user_id AND NOT usr.is_deleted)
    AND ($3::bigint IS NULL OR m.user_id = $3) AND ($5::bigint IS NULL OR m.group_id = $5)
    AND ${USED('m', 'm.id')}`;

/** Each kind of path, its table's alias and the column its page is ordered by (with the row id). */
const BRANCHES: readonly { readonly text: string; readonly alias: string; readonly at: string }[] = [
  { text: grants(false), alias: 'g', at: 'granted_at' },
  { text: grants(true), alias: 'g', at: 'granted_at' },
  { text: authorityPermissions(false), alias: 'ap', at: 'granted_at' },
  { text: authorityPermissions(true), alias: 'ap', at: 'granted_at' },
  { text: MEMBERSHIPS, alias: 'm', at: 'added_at' },
];
