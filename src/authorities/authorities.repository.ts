import { Injectable } from '@nestjs/common';
import { bumpProjectionVersions } from '../database/projection-versions.js';
import { DeviceAuthoritiesService } from '../auth/device-authorities.service.js';
import { CacheService } from '../cache/cache.service.js';
import type { Subject } from '../auth/auth-context.js';
import { ApiError } from '../common/api-error.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { ResourceTable } from '../database/resource-table.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import type { AuthorityDto } from './dto/authority.dto.js';

export interface AuthorityRow extends AuthorityDto {
  readonly version: number;
}

const RESOURCE_COLUMNS = `id, device_id, user_id, owner, is_active, revoked_at, revoked_by, revoke_reason, expires_at, label, assigned_by, assigned_at,
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;
export const AUTHORITY_COLUMNS = `version, ${RESOURCE_COLUMNS}`;

export const AUTHORITY_LIST: ListSpec = {
  from: 'authorities',
  select: RESOURCE_COLUMNS,
  idColumn: 'id',
  sort: { id: 'id', device_id: 'device_id', user_id: 'user_id', created_at: 'created_at', updated_at: 'updated_at' },
  defaultSort: 'id:asc',
  filters: {
    device_id: { column: 'device_id', type: 'int' },
    user_id: { column: 'user_id', type: 'int' },
    is_active: { column: 'is_active', type: 'bool' },
    owner: { column: 'owner', type: 'bool' },
  },
  search: ['label'],
  deletedColumn: 'is_deleted',
};

/** 422 for an action that would strip the owner of its rights; ownership moves only by transfer. */
export function ownerProtected(row: Pick<AuthorityRow, 'id' | 'device_id'>, action: string): ApiError {
  const done = action === 'delete' ? 'deleted' : action === 'expire' ? 'given an expiry' : `${action}d`;
  return new ApiError(
    'OWNER_AUTHORITY_PROTECTED',
    `The owner's authority cannot be ${done}; transfer the ownership first`,
    {
      authority_id: row.id,
      device_id: row.device_id,
      action,
    },
  );
}

/**
 * A right held only through an authority never widens that same authority (part 5's spirit: a
 * device-scoped right never lets its holder raise itself): extending one's own expiry needs the
 * role or a permission grant. Narrowing it is always allowed. (Activating or restoring one's own
 * authority cannot come from layer 3c at all: an inactive or deleted authority gives no rights.)
 */
export function assertNotExtendingOwn(
  actor: Subject,
  row: Pick<AuthorityRow, 'id' | 'user_id' | 'device_id'>,
  allowedGlobally: boolean,
): void {
  if (row.user_id !== actor.user_id || allowedGlobally) return;
  throw new ApiError('SELF_ACTION_FORBIDDEN', 'You cannot extend your own authority through a right on that device', {
    action: 'extend_authority',
    authority_id: row.id,
    device_id: row.device_id,
    user_id: actor.user_id,
  });
}

/** The lifecycle state named in 409s: revoked is terminal (except through transfer-owner). */
export function authorityState(row: Pick<AuthorityRow, 'revoked_at' | 'is_active'>): 'revoked' | 'active' | 'inactive' {
  if (row.revoked_at !== null) return 'revoked';
  return row.is_active ? 'active' : 'inactive';
}

/**
 * Row access for authorities. Every write also changes its device's authority set: the write
 * bumps the set's version in its transaction and rebuilds it after commit, so the next
 * request on any instance is authorised against the new state.
 */
@Injectable()
export class AuthoritiesRepository extends ResourceTable<AuthorityRow> {
  constructor(
    uow: UnitOfWork,
    cache: CacheService,
    private readonly deviceAuthorities: DeviceAuthoritiesService,
  ) {
    super(
      { table: 'authorities', columns: AUTHORITY_COLUMNS, type: 'authority', notFound: 'AUTHORITY_NOT_FOUND' },
      uow,
      cache,
    );
  }

  /**
   * `authorization: false` for changes that no authorization decision reads (the label): the
   * detail entry is rebuilt, the device's set is left alone.
   */
  async changed(tx: Tx, rows: readonly AuthorityRow[], authorization = true): Promise<void> {
    const devices = rows.map((row) => row.device_id);
    if (authorization) await bumpProjectionVersions(tx.db, 'device', devices);
    tx.afterCommit(async () => {
      await Promise.all([
        ...rows.map((row) => this.refresh(row)),
        ...(authorization ? [this.deviceAuthorities.refresh(devices)] : []),
      ]);
    });
  }
}
