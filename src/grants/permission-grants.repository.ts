import { Injectable } from '@nestjs/common';
import { AuthContextService } from '../access-model/auth-context.service.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import type { Holder } from '../access-model/holder.js';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { PermissionGrantDto } from './dto/permission-grant.dto.js';
import { table } from '../platform/database/table.js';

export interface GrantRow extends PermissionGrantDto {
  readonly version: number;
}

// `is_active` depends on the clock, so it is computed on every read (see `withLiveState`).
const ACTIVE = '(g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now()))';
const RESOURCE_COLUMNS = `g.id, g.user_id, g.group_id, g.permission_id, p.code AS permission_code, g.reason, g.expires_at, g.granted_by, g.granted_at,
  g.revoked_by, g.revoked_at, g.revoke_reason, ${ACTIVE} AS is_active`;
const FROM = 'permission_grants g JOIN permissions p ON p.id = g.permission_id';
// A grant changes once, when revoked: that is its version 2.

export const GRANT_LIST = listSpec({
  from: FROM,
  select: RESOURCE_COLUMNS,
  alias: 'g',
  // `is_active` is judged at now(): a page is good until the next grant expires.
  changesAt: 'g.expires_at',
  sort: ['id', 'granted_at'],
  filters: { user_id: 'int', group_id: 'int', permission_id: 'int', is_active: { column: ACTIVE, type: 'bool' } },
});

const PERMISSION_GRANTS = table('permission_grants', {
  columns: RESOURCE_COLUMNS,
  version: 'CASE WHEN g.revoked_at IS NULL THEN 1 ELSE 2 END',
  from: FROM,
  idColumn: 'g.id',
  list: GRANT_LIST,
});

/** Who holds a grant: a user, or a group (every member it reaches). */
export type GrantHolder = Holder;

/** The holder's column and id (trusted text for the column). */
function holderColumn(holder: GrantHolder): { column: 'user_id' | 'group_id'; id: number } {
  return holder.group_id === undefined
    ? { column: 'user_id', id: holder.user_id }
    : { column: 'group_id', id: holder.group_id };
}

/** What a grant may be given. */
export interface NewGrant {
  readonly holder: GrantHolder;
  readonly permission_id: number;
  readonly reason: string | null;
  readonly expires_at: Date | null;
  readonly granted_by: number | null;
}

/**
 * Permission grants: append-only rows (the database allows one revocation stamp and no DELETE).
 * Every write bumps the grantee's projection version and rebuilds its auth context after commit.
 */
@Injectable()
export class PermissionGrantsRepository extends ResourceTable<GrantRow> {
  constructor(
    uow: UnitOfWork,
    projections: Projections,
    private readonly authContexts: AuthContextService,
    private readonly groupAccess: GroupAccess,
  ) {
    super(
      { table: PERMISSION_GRANTS, type: 'permission_grant', notFound: 'PERMISSION_GRANT_NOT_FOUND' },
      uow,
      projections,
    );
  }

  /** Grants and revocations of one (holder, permission) pair run one at a time. */
  async lockPair(tx: Tx, holder: GrantHolder, permissionId: number): Promise<void> {
    // A user's key is as it always was; a group's has its own prefix.
    const prefix = holder.group_id === undefined ? 'permission_grant:' : 'permission_grant:group:';
    await tx.db.query("SELECT pg_advisory_xact_lock(hashtextextended($3 || $1 || ':' || $2, 0))", [
      holderColumn(holder).id,
      permissionId,
      prefix,
    ]);
  }

  /** The id of the pair's effective grant, if any. */
  async activeId(tx: Tx, holder: GrantHolder, permissionId: number): Promise<number | undefined> {
    const { column, id } = holderColumn(holder);
    const [row] = await tx.db.query<{ id: number }[]>(
      `SELECT g.id FROM permission_grants g WHERE g.${column} = $1 AND g.permission_id = $2 AND ${ACTIVE} ORDER BY g.id DESC LIMIT 1`,
      [id, permissionId],
    );
    return row?.id;
  }

  async grant(tx: Tx, grant: NewGrant): Promise<GrantRow> {
    const [inserted] = await tx.write<{ id: number }[]>(
      PERMISSION_GRANTS,
      'INSERT INTO permission_grants (user_id, group_id, permission_id, reason, expires_at, granted_by) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id',
      [
        grant.holder.user_id ?? null,
        grant.holder.group_id ?? null,
        grant.permission_id,
        grant.reason,
        grant.expires_at,
        grant.granted_by,
      ],
    );
    const created = await this.find(tx.db, inserted?.id ?? 0);
    if (created === undefined) throw new Error('grant insert returned no row');
    await this.changed(tx, [created]);
    return created;
  }

  /** Stamps the revocation (the one change the table allows). */
  async revoke(tx: Tx, id: number, actor: number | null, reason: string | null): Promise<GrantRow> {
    await tx.write(
      PERMISSION_GRANTS,
      'UPDATE permission_grants SET revoked_at = now(), revoked_by = $2, revoke_reason = $3 WHERE id = $1',
      [id, actor, reason],
    );
    const revoked = await this.find(tx.db, id);
    if (revoked === undefined) throw new Error('revoked grant vanished');
    await this.changed(tx, [revoked]);
    return revoked;
  }

  /**
   * The grantee's effective permissions changed: bump, then rebuild its auth context after commit.
   * A group's grant changes those of every user the group reaches.
   */
  protected override async onChanged(tx: Tx, rows: readonly GrantRow[]): Promise<void> {
    const users = rows.flatMap((row) => (row.user_id === null ? [] : [row.user_id]));
    const groups = rows.flatMap((row) => (row.group_id === null ? [] : [row.group_id]));
    tx.bumpProjections('user', users);
    this.groupAccess.changed(tx, await this.groupAccess.reached(tx, groups), 'user');
    tx.afterCommit(async () => {
      await Promise.all([
        ...rows.map((row) => this.refresh(row)),
        ...users.map((user) => this.authContexts.refreshUser(user)),
      ]);
    });
  }
}
