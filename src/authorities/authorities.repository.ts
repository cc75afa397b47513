import { pastParticiple } from '../platform/http/article.js';
import { Injectable } from '@nestjs/common';
import { AuthContextService } from '../access-model/auth-context.service.js';
import { DeviceAuthoritiesService } from '../access-model/device-authorities.service.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import { Projections } from '../platform/projections/projections.js';
import type { Subject } from '../platform/auth/auth-context.js';
import { ApiError } from '../platform/http/api-error.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { AuthorityDto } from './dto/authority.dto.js';
import { table } from '../platform/database/table.js';

export interface AuthorityRow extends AuthorityDto {
  readonly version: number;
}

const RESOURCE_COLUMNS = `id, device_id, user_id, group_id, owner, is_active, revoked_at, revoked_by, revoke_reason, expires_at, label, assigned_by, assigned_at,
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;

export const AUTHORITY_LIST = listSpec({
  from: 'authorities',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'device_id', 'user_id', 'created_at', 'updated_at'],
  filters: { device_id: 'int', user_id: 'int', group_id: 'int', is_active: 'bool', owner: 'bool' },
  search: ['label'],
  deletedColumn: 'is_deleted',
});

const AUTHORITIES = table('authorities', { columns: RESOURCE_COLUMNS, list: AUTHORITY_LIST });

/** 422 for an action that would strip the owner of its rights; ownership moves only by transfer. */
export function ownerProtected(row: Pick<AuthorityRow, 'id' | 'device_id'>, action: string): ApiError {
  const done = action === 'delete' ? 'deleted' : action === 'expire' ? 'given an expiry' : pastParticiple(action);
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
  holders: readonly number[] = row.user_id === null ? [] : [row.user_id],
): void {
  // Its own: its user's, or (a group's) held by every user the group reaches.
  if (!holders.includes(actor.user_id) || allowedGlobally) return;
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
/** The columns an authorities write may set. */
type AuthorityColumn =
  | 'device_id'
  | 'user_id'
  | 'group_id'
  | 'is_active'
  | 'revoked_at'
  | 'revoked_by'
  | 'revoke_reason'
  | 'expires_at'
  | 'label'
  | 'owner'
  | 'assigned_by'
  | 'created_by'
  | 'updated_by'
  | 'is_deleted'
  | 'deleted_at'
  | 'deleted_by';

/** Columns no authorization decision reads: changing only these leaves the device's authority set alone. */
const NOT_READ_BY_AUTHORIZATION: ReadonlySet<string> = new Set(['label', 'updated_by']);

// A transfer revives an authority that was deleted, revoked, inactive or expired: it is assigned anew.
const NOT_EFFECTIVE =
  '(authorities.is_deleted OR authorities.revoked_at IS NOT NULL OR NOT authorities.is_active OR authorities.expires_at <= now())';

@Injectable()
export class AuthoritiesRepository extends ResourceTable<AuthorityRow, AuthorityColumn> {
  constructor(
    uow: UnitOfWork,
    projections: Projections,
    private readonly deviceAuthorities: DeviceAuthoritiesService,
    private readonly authContexts: AuthContextService,
    private readonly groupAccess: GroupAccess,
  ) {
    super({ table: AUTHORITIES, type: 'authority', notFound: 'AUTHORITY_NOT_FOUND' }, uow, projections);
  }

  /** The user's (or the group's) authority on the device, deleted or not (there is at most one). */
  async findPair(
    tx: Tx,
    deviceId: number,
    holder: { readonly user_id?: number; readonly group_id?: number },
  ): Promise<{ readonly id: number; readonly is_deleted: boolean } | undefined> {
    const column = holder.group_id === undefined ? 'user_id' : 'group_id';
    const [row] = await tx.db.query<{ id: number; is_deleted: boolean }[]>(
      `SELECT id, is_deleted FROM authorities WHERE device_id = $1 AND ${column} = $2`,
      [deviceId, holder.group_id ?? holder.user_id],
    );
    return row;
  }

  /** The users who hold the authority: its user, or every user its group reaches now. */
  async usersHolding(tx: Tx, authority: Pick<AuthorityRow, 'user_id' | 'group_id'>): Promise<number[]> {
    if (authority.user_id !== null) return [authority.user_id];
    return authority.group_id === null ? [] : this.groupAccess.reached(tx, [authority.group_id]);
  }

  /**
   * Every write bumps the device's authority-set version and its holder's auth context version
   * (which carries the holder's authorities) in its transaction and rebuilds both after commit,
   * unless it set only columns no authorization decision reads (a label).
   */
  protected override async onChanged(
    tx: Tx,
    rows: readonly AuthorityRow[],
    columns: readonly string[] = [],
  ): Promise<void> {
    const authorization = columns.length === 0 || columns.some((column) => !NOT_READ_BY_AUTHORIZATION.has(column));
    const devices = rows.map((row) => row.device_id);
    const holders = rows.flatMap((row) => (row.user_id === null ? [] : [row.user_id]));
    if (authorization) {
      tx.bumpProjections('device', devices);
      tx.bumpProjections('user', holders);
      // A group's authority is carried in the contexts of every member it reaches.
      const groups = rows.flatMap((row) => (row.group_id === null ? [] : [row.group_id]));
      if (groups.length > 0) this.groupAccess.changed(tx, await this.groupAccess.reached(tx, groups), 'user');
    }
    tx.afterCommit(async () => {
      await Promise.all([
        ...rows.map((row) => this.refresh(row)),
        ...(authorization ? [this.deviceAuthorities.refresh(devices), this.authContexts.refreshUsers(holders)] : []),
      ]);
    });
  }

  /**
   * Makes the user the device's owner (transfer-owner): creates the authority, or makes it live,
   * active, unrevoked and without expiry; a transfer that creates or revives it assigns it anew.
   */
  async makeOwner(tx: Tx, deviceId: number, userId: number, actor: number | null): Promise<AuthorityRow> {
    const [promoted] = await tx.write<AuthorityRow[]>(
      AUTHORITIES,
      `INSERT INTO authorities (device_id, user_id, owner, created_by, updated_by, assigned_by) VALUES ($1, $2, true, $3, $3, $3)
       ON CONFLICT (device_id, user_id) DO UPDATE SET owner = true, is_active = true, revoked_at = NULL, revoked_by = NULL,
         revoke_reason = NULL, expires_at = NULL, is_deleted = false, deleted_at = NULL, deleted_by = NULL, updated_by = $3,
         assigned_by = CASE WHEN ${NOT_EFFECTIVE} THEN $3 ELSE authorities.assigned_by END,
         assigned_at = CASE WHEN ${NOT_EFFECTIVE} THEN now() ELSE authorities.assigned_at END
       RETURNING ${AUTHORITIES.selected}`,
      [deviceId, userId, actor],
    );
    if (promoted === undefined) throw new Error('owner authority upsert returned no row');
    await this.changed(tx, [promoted]);
    return promoted;
  }

  /** The device's current owner authority, locked; undefined on a device without owner. */
  async lockOwnerOf(tx: Tx, deviceId: number): Promise<AuthorityRow | undefined> {
    const [owner] = await tx.db.query<AuthorityRow[]>(
      `SELECT ${AUTHORITIES.selected} FROM authorities WHERE device_id = $1 AND owner FOR UPDATE`,
      [deviceId],
    );
    return owner;
  }
}
