import { Injectable } from '@nestjs/common';
import { bumpProjectionVersions } from '../database/projection-versions.js';
import { DeviceAuthoritiesService } from '../auth/device-authorities.service.js';
import { CacheService } from '../cache/cache.service.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { ResourceTable } from '../database/resource-table.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import type { AuthorityPermissionDto } from './dto/authority-permission.dto.js';

export interface AuthorityPermissionRow extends AuthorityPermissionDto {
  readonly version: number;
}

const RESOURCE_COLUMNS = `ap.id, ap.authority_id, a.device_id, ap.permission_id, p.code AS permission_code, ap.granted_by, ap.granted_at,
  ap.revoked_by, ap.revoked_at, ap.revoked_at IS NULL AS is_active`;
export const AUTHORITY_PERMISSION_FROM =
  'authority_permissions ap JOIN authorities a ON a.id = ap.authority_id JOIN permissions p ON p.id = ap.permission_id';
// A row changes once, when revoked: that is its version 2.
const COLUMNS = `CASE WHEN ap.revoked_at IS NULL THEN 1 ELSE 2 END AS version, ${RESOURCE_COLUMNS}`;

export const AUTHORITY_PERMISSION_LIST: ListSpec = {
  from: AUTHORITY_PERMISSION_FROM,
  select: RESOURCE_COLUMNS,
  idColumn: 'ap.id',
  sort: { id: 'ap.id', granted_at: 'ap.granted_at' },
  defaultSort: 'id:asc',
  filters: {
    authority_id: { column: 'ap.authority_id', type: 'int' },
    permission_id: { column: 'ap.permission_id', type: 'int' },
    device_id: { column: 'a.device_id', type: 'int' },
    is_active: { column: '(ap.revoked_at IS NULL)', type: 'bool' },
  },
  search: [],
};

/**
 * Row access for authority permissions. A change alters its device's authority set: bump the
 * set's version in the transaction, rebuild it (and the detail entries) after commit.
 */
@Injectable()
export class AuthorityPermissionsRepository extends ResourceTable<AuthorityPermissionRow> {
  constructor(
    uow: UnitOfWork,
    cache: CacheService,
    private readonly deviceAuthorities: DeviceAuthoritiesService,
  ) {
    super(
      {
        table: 'authority_permissions',
        from: AUTHORITY_PERMISSION_FROM,
        idColumn: 'ap.id',
        columns: COLUMNS,
        type: 'authority_permission',
        notFound: 'AUTHORITY_PERMISSION_NOT_FOUND',
      },
      uow,
      cache,
    );
  }

  async findMany(tx: Tx, ids: readonly number[]): Promise<AuthorityPermissionRow[]> {
    if (ids.length === 0) return [];
    return tx.db.query<AuthorityPermissionRow[]>(
      `SELECT ${COLUMNS} FROM ${AUTHORITY_PERMISSION_FROM} WHERE ap.id = ANY($1::bigint[])`,
      [[...ids]],
    );
  }

  /**
   * One change rebuilds its device's set at once (the next check is a hit); a bulk change marks
   * the sets stale at their new versions instead, so a thousand items cost no rebuild queries.
   * New rows (version 1) were never cached, so only revocations refresh a detail entry.
   */
  async changed(
    tx: Tx,
    rows: readonly AuthorityPermissionRow[],
    mode: 'rebuild' | 'invalidate' = 'rebuild',
  ): Promise<void> {
    const devices = rows.map((row) => row.device_id);
    const versions = await bumpProjectionVersions(tx.db, 'device', devices);
    const revoked = rows.filter((row) => row.version > 1);
    tx.afterCommit(async () => {
      await Promise.all([
        ...revoked.map((row) => this.refresh(row)),
        mode === 'rebuild' ? this.deviceAuthorities.refresh(devices) : this.deviceAuthorities.invalidate(versions),
      ]);
    });
  }
}
