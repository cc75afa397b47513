import { permissionCodeOf } from '../platform/auth/permissions.js';
import { Injectable } from '@nestjs/common';
import { ApiError } from '../platform/http/api-error.js';
import { DeviceAuthoritiesService } from '../access-model/device-authorities.service.js';
import { AuthContextService } from '../access-model/auth-context.service.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable, withoutVersion } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { AuthorityPermissionDto } from './dto/authority-permission.dto.js';
import { table } from '../platform/database/table.js';

export interface AuthorityPermissionRow extends AuthorityPermissionDto {
  readonly version: number;
}

/**
 * A row allows while it is unrevoked and unexpired (`is_active`, judged at `now()` on every read; the
 * service judges cached rows again). Writers judge at `clock_timestamp()`: they may have waited for
 * an authority's lock since their transaction began, and a row expired meanwhile no longer counts.
 */
const ACTIVE = '(ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now()))';
const LIVE_NOW = '(ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > clock_timestamp()))';
const RESOURCE_COLUMNS = `ap.id, ap.authority_id, a.device_id, ap.permission_id, p.code AS permission_code, ap.granted_by, ap.granted_at,
  ap.expires_at, ap.revoked_by, ap.revoked_at, ${ACTIVE} AS is_active`;
export const AUTHORITY_PERMISSION_FROM =
  'authority_permissions ap JOIN authorities a ON a.id = ap.authority_id JOIN permissions p ON p.id = ap.permission_id';
// A row changes once, when revoked: that is its version 2.

export const AUTHORITY_PERMISSION_LIST = listSpec({
  from: AUTHORITY_PERMISSION_FROM,
  select: RESOURCE_COLUMNS,
  alias: 'ap',
  // `is_active` is judged at now(): a page is good until the next permission expires.
  changesAt: 'ap.expires_at',
  sort: ['id', 'granted_at'],
  filters: {
    authority_id: 'int',
    permission_id: 'int',
    device_id: { column: 'a.device_id', type: 'int' },
    is_active: { column: ACTIVE, type: 'bool' },
  },
});

const AUTHORITY_PERMISSIONS = table('authority_permissions', {
  columns: RESOURCE_COLUMNS,
  version: 'CASE WHEN ap.revoked_at IS NULL THEN 1 ELSE 2 END',
  from: AUTHORITY_PERMISSION_FROM,
  idColumn: 'ap.id',
  list: AUTHORITY_PERMISSION_LIST,
});

/**
 * Row access for authority permissions. A change alters its device's authority set: bump the
 * set's version in the transaction, rebuild it (and the detail entries) after commit.
 */
/** What one statement learns about every item: the authority, the permission, any active (unexpired) row. */
export interface Resolved {
  readonly ord: number;
  readonly device_id: number | null;
  readonly authority_user_id: number | null;
  /** The group holding the authority (v1.3), or null for a user's. */
  readonly authority_group_id: number | null;
  readonly authority_deleted: boolean | null;
  readonly code: string | null;
  readonly device_scoped: boolean | null;
  readonly active_id: number | null;
}

/** Exported for the benchmark's raw-pg baseline, which must run the very same statement. */
export const RESOLVE = `
  SELECT i.ord::int AS ord, a.device_id, a.user_id AS authority_user_id, a.group_id AS authority_group_id, a.is_deleted AS authority_deleted, p.code, p.device_scoped,
         (SELECT ap.id FROM authority_permissions ap WHERE ap.authority_id = i.authority_id AND ap.permission_id = i.permission_id AND ${LIVE_NOW}
          ORDER BY ap.id DESC LIMIT 1) AS active_id
  FROM unnest($1::bigint[], $2::int[]) WITH ORDINALITY AS i(authority_id, permission_id, ord)
  LEFT JOIN authorities a ON a.id = i.authority_id
  LEFT JOIN permissions p ON p.id = i.permission_id
  ORDER BY i.ord`;

/**
 * The bulk grant's insert ($1 authority ids, $2 permission ids, $3 the actor): each pair not held
 * unexpired, in one fixed order. Exported for the benchmark's raw-SQL baseline, which sends the
 * same statements.
 */
export const INSERT_MANY = `INSERT INTO authority_permissions (authority_id, permission_id, granted_by, expires_at)
  SELECT DISTINCT ON (i.authority_id, i.permission_id) i.authority_id, i.permission_id, $3::bigint, i.expires_at
  FROM unnest($1::bigint[], $2::int[], $4::timestamptz[]) AS i(authority_id, permission_id, expires_at)
  WHERE NOT EXISTS (SELECT 1 FROM authority_permissions ap
                    WHERE ap.authority_id = i.authority_id AND ap.permission_id = i.permission_id AND ${LIVE_NOW})
  ORDER BY i.authority_id, i.permission_id, i.expires_at DESC NULLS FIRST
  ON CONFLICT (authority_id, permission_id) WHERE revoked_at IS NULL AND expires_at IS NULL DO NOTHING
  RETURNING id, authority_id, permission_id`;

@Injectable()
export class AuthorityPermissionsRepository extends ResourceTable<AuthorityPermissionRow> {
  constructor(
    uow: UnitOfWork,
    projections: Projections,
    private readonly deviceAuthorities: DeviceAuthoritiesService,
    private readonly authContexts: AuthContextService,
    private readonly groupAccess: GroupAccess,
  ) {
    super(
      { table: AUTHORITY_PERMISSIONS, type: 'authority_permission', notFound: 'AUTHORITY_PERMISSION_NOT_FOUND' },
      uow,
      projections,
    );
  }

  async findMany(tx: Tx, ids: readonly number[]): Promise<AuthorityPermissionRow[]> {
    if (ids.length === 0) return [];
    return tx.db.query<AuthorityPermissionRow[]>(
      `SELECT ${AUTHORITY_PERMISSIONS.selected} FROM ${AUTHORITY_PERMISSION_FROM} WHERE ap.id = ANY($1::bigint[])`,
      [[...ids]],
    );
  }

  /** One change rebuilds its device's set at once, so the next check is a hit. */
  protected override onChanged(tx: Tx, rows: readonly AuthorityPermissionRow[]): Promise<void> {
    return this.record(tx, rows, 'rebuild');
  }

  /** A bulk change marks the sets stale at their new versions: a thousand items cost no rebuild queries. */
  changedInBulk(tx: Tx, rows: readonly AuthorityPermissionRow[]): Promise<void> {
    return this.record(tx, rows, 'invalidate');
  }

  /**
   * Attaches the permission (201), until `expiresAt` when given; undefined when the authority
   * already holds it unexpired. The caller holds the authority's lock (`lockAuthorities`), so the
   * check and the insert cannot interleave with another writer of the pair.
   */
  async grant(
    tx: Tx,
    authorityId: number,
    permissionId: number,
    actor: number | null,
    expiresAt: Date | null = null,
  ): Promise<AuthorityPermissionRow | undefined> {
    const [inserted] = await tx.write<{ id: number }[]>(
      AUTHORITY_PERMISSIONS,
      `INSERT INTO authority_permissions (authority_id, permission_id, granted_by, expires_at)
       SELECT $1, $2, $3, $4::timestamptz
       WHERE NOT EXISTS (SELECT 1 FROM authority_permissions ap WHERE ap.authority_id = $1 AND ap.permission_id = $2 AND ${LIVE_NOW})
       ON CONFLICT (authority_id, permission_id) WHERE revoked_at IS NULL AND expires_at IS NULL DO NOTHING RETURNING id`,
      [authorityId, permissionId, actor, expiresAt],
    );
    if (inserted === undefined) return undefined;
    const [created] = await this.findMany(tx, [inserted.id]);
    if (created === undefined) throw new Error('authority permission insert returned no row');
    await this.changed(tx, [created]);
    return created;
  }

  /** The id of the pair's active (unrevoked, unexpired) row, if any. */
  async activeId(tx: Tx, authorityId: number, permissionId: number): Promise<number | null> {
    const [row] = await tx.db.query<{ id: number }[]>(
      `SELECT ap.id FROM authority_permissions ap WHERE ap.authority_id = $1 AND ap.permission_id = $2 AND ${LIVE_NOW}
       ORDER BY ap.id DESC LIMIT 1`,
      [authorityId, permissionId],
    );
    return row?.id ?? null;
  }

  /**
   * Stamps the revocation of a live row (locked, then `checkVersion`); `already` when it was
   * revoked or has expired (it allows nothing, and its expiry stays what ended it), 404 when missing.
   */
  /** Whose authority, on which device, holds the row (undefined: no such row). */
  async holderOf(
    tx: Tx,
    id: number,
  ): Promise<{ user_id: number | null; group_id: number | null; device_id: number; code: string } | undefined> {
    const [row] = await tx.db.query<
      { user_id: string | null; group_id: string | null; device_id: string; permission_id: number }[]
    >(
      'SELECT a.user_id, a.group_id, a.device_id, ap.permission_id FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id WHERE ap.id = $1',
      [id],
    );
    const code = row === undefined ? undefined : permissionCodeOf(row.permission_id);
    return row === undefined || code === undefined
      ? undefined
      : {
          user_id: row.user_id === null ? null : Number(row.user_id),
          group_id: row.group_id === null ? null : Number(row.group_id),
          device_id: Number(row.device_id),
          code,
        };
  }

  async revoke(
    tx: Tx,
    id: number,
    actor: number | null,
    checkVersion: (version: number) => void,
  ): Promise<AuthorityPermissionRow | 'already'> {
    const [locked] = await tx.db.query<{ revoked_at: Date | null; expired: boolean }[]>(
      `SELECT revoked_at, coalesce(expires_at <= clock_timestamp(), false) AS expired
       FROM authority_permissions WHERE id = $1 FOR UPDATE`,
      [id],
    );
    if (locked === undefined) throw ApiError.notFound('AUTHORITY_PERMISSION_NOT_FOUND', id);
    // The version as the table's shape computes it: 1 unrevoked, 2 revoked. Checked before the no-op too.
    checkVersion(locked.revoked_at === null ? 1 : 2);
    if (locked.revoked_at !== null || locked.expired) return 'already';
    await tx.write(
      AUTHORITY_PERMISSIONS,
      'UPDATE authority_permissions SET revoked_at = now(), revoked_by = $2 WHERE id = $1',
      [id, actor],
    );
    const [revoked] = await this.findMany(tx, [id]);
    if (revoked === undefined) throw ApiError.notFound('AUTHORITY_PERMISSION_NOT_FOUND', id);
    await this.changed(tx, [revoked]);
    return revoked;
  }

  /**
   * Locks the authorities a write of their permissions touches, in id order: writes on the
   * same authority take turns (so overlapping bulks end as some serial order of them would),
   * and two bulks can never wait for each other in a cycle. A separate statement, so that what
   * is read next is read after the wait.
   */
  async lockAuthorities(tx: Tx, authorityIds: readonly number[]): Promise<void> {
    await tx.db.query('SELECT id FROM authorities WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE', [
      [...new Set(authorityIds)],
    ]);
  }

  /** What one statement learns about every item of a bulk body, in the body's order. */
  resolve(tx: Tx, items: readonly [readonly number[], readonly number[]]): Promise<Resolved[]> {
    return tx.db.query<Resolved[]>(RESOLVE, [[...items[0]], [...items[1]]]);
  }

  /**
   * Bulk grant (one statement): inserts each distinct pair that has no active (unexpired) row;
   * answers the rows it inserted. The caller holds the authorities' locks. Registers nothing: the
   * caller records the batch with `changedInBulk`.
   */
  insertMany(
    tx: Tx,
    pairs: readonly {
      readonly authority_id: number;
      readonly permission_id: number;
      readonly expires_at?: Date | null;
    }[],
    actor: number | null,
  ): Promise<{ id: number; authority_id: number; permission_id: number }[]> {
    return tx.write(AUTHORITY_PERMISSIONS, INSERT_MANY, [
      pairs.map((pair) => pair.authority_id),
      pairs.map((pair) => pair.permission_id),
      actor,
      pairs.map((pair) => pair.expires_at ?? null),
    ]);
  }

  /** Bulk revoke (one statement): stamps the active (unexpired) rows among `ids`; answers the ids it revoked. */
  async revokeMany(tx: Tx, ids: readonly number[], actor: number | null): Promise<number[]> {
    const [revoked] = await tx.write<[{ id: number }[], number]>(
      AUTHORITY_PERMISSIONS,
      `UPDATE authority_permissions SET revoked_at = now(), revoked_by = $2
       WHERE id IN (SELECT ap.id FROM authority_permissions ap WHERE ap.id = ANY($1::bigint[]) AND ${LIVE_NOW} ORDER BY ap.id FOR UPDATE)
       RETURNING id`,
      [[...ids], actor],
    );
    return revoked.map((row) => row.id);
  }

  /**
   * New rows (version 1) were never cached, so only revocations refresh a detail entry. The
   * devices' authority sets and the holders' auth contexts (which carry their authorities' permissions)
   * move to new versions in the transaction and are rebuilt (or, in bulk, the sets marked stale) after it;
   * the contexts of a group's members as any group change has them (`GroupAccess.changed`).
   */
  private async record(tx: Tx, rows: readonly AuthorityPermissionRow[], mode: 'rebuild' | 'invalidate'): Promise<void> {
    if (rows.length === 0) return;
    for (const row of rows) tx.noteResource('authority_permission', withoutVersion(row));
    const devices = rows.map((row) => row.device_id);
    const versions = tx.bumpProjections('device', devices);
    const holders = await this.userHoldersOf(tx, rows);
    tx.bumpProjections('user', holders);
    // Every user the authorities' groups reach, as any change of what a group confers: rebuilt
    // after the commit, or beyond 1 000 marked stale in the write (a review found this path
    // rebuilding 100 000 contexts after the commit, past its budget, and the cache dropped).
    this.groupAccess.changed(tx, await this.groupReach(tx, rows), 'user');
    const revoked = rows.filter((row) => row.version > 1);
    tx.afterCommit(async () => {
      await Promise.all([
        ...revoked.map((row) => this.refresh(row)),
        mode === 'rebuild' ? this.deviceAuthorities.refresh(devices) : this.deviceAuthorities.invalidate(versions),
        this.authContexts.refreshUsers(holders),
      ]);
    });
  }

  /** Every user the groups holding the rows' authorities reach. */
  private async groupReach(tx: Tx, rows: readonly AuthorityPermissionRow[]): Promise<number[]> {
    const groups = await tx.db.query<{ group_id: string }[]>(
      'SELECT DISTINCT group_id FROM authorities WHERE id = ANY($1::bigint[]) AND group_id IS NOT NULL',
      [[...new Set(rows.map((row) => row.authority_id))]],
    );
    return this.groupAccess.reached(
      tx,
      groups.map((group) => Number(group.group_id)),
    );
  }

  private async userHoldersOf(tx: Tx, rows: readonly AuthorityPermissionRow[]): Promise<number[]> {
    const holders = await tx.db.query<{ user_id: string }[]>(
      'SELECT DISTINCT user_id FROM authorities WHERE id = ANY($1::bigint[]) AND user_id IS NOT NULL',
      [[...new Set(rows.map((row) => row.authority_id))]],
    );
    return holders.map((holder) => Number(holder.user_id));
  }
}
