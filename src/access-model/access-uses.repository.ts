import { Injectable } from '@nestjs/common';
import { UnitOfWork } from '../platform/database/unit-of-work.js';

/**
 * Uses noted by an instance since its last flush: grants by id, authority permissions by their
 * pair, memberships by their user and group.
 */
export interface PathUses {
  readonly grants: readonly { readonly grant_id: number; readonly at: Date }[];
  readonly authorityPermissions: readonly {
    readonly authority_id: number;
    readonly permission_id: number;
    readonly at: Date;
  }[];
  readonly memberships?: readonly { readonly user_id: number; readonly group_id: number; readonly at: Date }[];
}

/**
 * The last use of each revocable path (migration `access-path-uses`). Bookkeeping, not a write of
 * the API: one statement per flush, outside any request's transaction, with no audit event.
 */
@Injectable()
export class AccessUsesRepository {
  constructor(private readonly uow: UnitOfWork) {}

  /**
   * Records a batch; an authority permission is found by its pair as it was at the use (granted
   * before it, neither revoked nor expired then): the row a guard allowed through, not an expired
   * one beside it or a later one that replaced it. A membership likewise: the user's membership of
   * the group live at the use.
   */
  async record(uses: PathUses): Promise<void> {
    await this.uow.reader.query(
      `INSERT INTO access_path_uses AS u (kind, path_id, last_used_at)
       SELECT 'g', g.id, max(n.at) FROM unnest($1::bigint[], $2::timestamptz[]) AS n(id, at)
         JOIN permission_grants g ON g.id = n.id GROUP BY g.id
       UNION ALL
       SELECT 'a', ap.id, max(n.at) FROM unnest($3::bigint[], $4::int[], $5::timestamptz[]) AS n(authority_id, permission_id, at)
         JOIN authority_permissions ap ON ap.authority_id = n.authority_id AND ap.permission_id = n.permission_id
          AND ap.revoked_at IS NULL AND ap.granted_at <= n.at AND (ap.expires_at IS NULL OR ap.expires_at > n.at)
         GROUP BY ap.id
       UNION ALL
       SELECT 'm', m.id, max(n.at) FROM unnest($6::bigint[], $7::bigint[], $8::timestamptz[]) AS n(user_id, group_id, at)
         JOIN group_memberships m ON m.user_id = n.user_id AND m.group_id = n.group_id AND m.added_at <= n.at
          AND (m.removed_at IS NULL OR m.removed_at > n.at) AND (m.expires_at IS NULL OR m.expires_at > n.at)
         GROUP BY m.id
       ORDER BY 1, 2
       ON CONFLICT (kind, path_id) DO UPDATE SET last_used_at = greatest(u.last_used_at, EXCLUDED.last_used_at)`,
      [
        uses.grants.map((use) => use.grant_id),
        uses.grants.map((use) => use.at),
        uses.authorityPermissions.map((use) => use.authority_id),
        uses.authorityPermissions.map((use) => use.permission_id),
        uses.authorityPermissions.map((use) => use.at),
        (uses.memberships ?? []).map((use) => use.user_id),
        (uses.memberships ?? []).map((use) => use.group_id),
        (uses.memberships ?? []).map((use) => use.at),
      ],
    );
  }

  /** The last uses of the given grants and authority permissions (by their pairs), keyed `g:<id>` / `a:<authority>:<permission>`. */
  async lastUses(
    grantIds: readonly number[],
    pairs: readonly { readonly authority_id: number; readonly permission_id: number }[],
  ): Promise<Map<string, Date>> {
    if (grantIds.length === 0 && pairs.length === 0) return new Map();
    const rows = await this.uow.reader.query<{ key: string; last_used_at: Date }[]>(
      `SELECT 'g:' || u.path_id AS key, u.last_used_at FROM access_path_uses u
       WHERE u.kind = 'g' AND u.path_id = ANY($1::bigint[])
       UNION ALL
       SELECT 'a:' || ap.authority_id || ':' || ap.permission_id, u.last_used_at
       FROM unnest($2::bigint[], $3::int[]) AS p(authority_id, permission_id)
       JOIN authority_permissions ap ON ap.authority_id = p.authority_id AND ap.permission_id = p.permission_id
        AND ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now())
       JOIN access_path_uses u ON u.kind = 'a' AND u.path_id = ap.id`,
      [[...grantIds], pairs.map((pair) => pair.authority_id), pairs.map((pair) => pair.permission_id)],
    );
    return new Map(rows.map((row) => [row.key, row.last_used_at]));
  }
}
