import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AuthContextService } from '../access-model/auth-context.service.js';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { UserDto } from './dto/user.dto.js';
import { table } from '../platform/database/table.js';
import { effectiveRoleSql } from '../access-model/group-facts.repository.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import type { UserVersions } from '../access-model/access-facts.repository.js';

/** A users row as read: the resource plus its version. */
export interface UserRow extends UserDto {
  readonly version: number;
}

// `pin_hash` is never selected: only whether one is set. The effective role is read through the
// user's groups (part 6.18); a membership expiring changes it with no write, so a cached entry
// may show the role from before until it is rebuilt or expires.
const RESOURCE_COLUMNS = `id, email, display_name, phone, user_name, external_id, role_id, ${effectiveRoleSql('users.id', 'users.role_id')} AS effective_role_id,
  status_id, pin_hash IS NOT NULL AS pin_set, pin_reset_at,
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;

// The row version: the record's own, plus what its groups give it (`user_groups`: its effective role).
const VERSION = `users.version + coalesce((SELECT v.version FROM projection_versions v WHERE v.scope = 'user_groups' AND v.id = users.id), 1) - 1`;
/** `VERSION` from its parts, as a write read them (`UserVersions`). */
const versionOf = (parts: UserVersions): number => parts.own + parts.groups - 1;

export const USER_LIST = listSpec({
  from: 'users',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'email', 'display_name', 'created_at', 'updated_at'],
  filters: { status_id: 'int', role_id: 'int', external_id: 'string' },
  search: ['email', 'display_name', 'user_name'],
  deletedColumn: 'is_deleted',
  alsoReads: ['group_memberships', 'groups'],
});

export const USERS = table('users', { columns: RESOURCE_COLUMNS, version: VERSION, list: USER_LIST });

/**
 * The user as the API shows it, read in the caller's transaction: what a write made outside the
 * unit of work (the CLI) puts on the feed, as `changed` does for the server's writes.
 */
export async function userResource(db: EntityManager, id: number): Promise<UserDto> {
  const [user] = await db.query<UserDto[]>(`SELECT ${RESOURCE_COLUMNS} FROM users WHERE id = $1`, [id]);
  if (user === undefined) throw new Error(`user ${id} not found`);
  return user;
}

/** The columns a users write may set. */
type UserColumn =
  | 'email'
  | 'display_name'
  | 'phone'
  | 'user_name'
  | 'external_id'
  | 'scim_profile'
  | 'role_id'
  | 'status_id'
  | 'pin_hash'
  | 'pin_reset_at'
  | 'created_by'
  | 'updated_by'
  | 'is_deleted'
  | 'deleted_at'
  | 'deleted_by';

/** Row access for users; every write also rebuilds the user's half of the auth context. */
@Injectable()
export class UsersRepository extends ResourceTable<UserRow, UserColumn> {
  /** The users each write in flight created (weakly held: forgotten with the transaction). */
  private readonly createdBy = new WeakMap<Tx, Set<number>>();

  constructor(
    uow: UnitOfWork,
    projections: Projections,
    private readonly authContexts: AuthContextService,
    groupAccess: GroupAccess,
  ) {
    super({ table: USERS, type: 'user', notFound: 'USER_NOT_FOUND' }, uow, projections);
    // A change of groups changes the effective role each reached user's detail shows.
    groupAccess.onUsersChanged((ids) => this.refreshMany(ids));
    groupAccess.onUsersStale((versions) => this.markStale(versions));
  }

  /** These users' detail entries marked stale at their versions as the write read them. */
  private markStale(versions: ReadonlyMap<number, UserVersions>): Promise<boolean> {
    return this.invalidate(new Map([...versions].map(([id, parts]) => [id, versionOf(parts)])));
  }

  /** Rebuilds the detail entries of these users (after a change of their groups). */
  async refreshMany(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    const rows = await this.uow.reader.query<UserRow[]>(
      `SELECT ${USERS.selected} FROM users WHERE id = ANY($1::bigint[])`,
      [[...ids]],
    );
    await this.refreshRows(rows);
  }

  /** What SCIM keeps of the user beside the admin API's fields (part 6.19), as stored. */
  async scimProfileOf(tx: Tx, id: number): Promise<Readonly<Record<string, unknown>> | null> {
    const [row] = await tx.db.query<{ scim_profile: Record<string, unknown> | null }[]>(
      'SELECT scim_profile FROM users WHERE id = $1',
      [id],
    );
    return row?.scim_profile ?? null;
  }

  /** Inserts the user, remembering it was created by this write (see `onChanged`). */
  override async insert(
    tx: Tx,
    values: Parameters<ResourceTable<UserRow, UserColumn>['insert']>[1],
    onConflict?: string,
  ) {
    const row = await super.insert(tx, values, onConflict);
    if (row !== undefined) {
      const created = this.createdBy.get(tx) ?? new Set<number>();
      created.add(row.id);
      this.createdBy.set(tx, created);
    }
    return row;
  }

  /**
   * After commit: the detail entry and the auth context's user entry (role, status, deletion). A
   * user this write created has no auth context entry to replace: one is read only for a session,
   * and none could exist before the commit; its first request loads it. Skipping that rebuild saves
   * a SCIM create (an identity provider's first sync makes thousands) three round trips.
   */
  protected override onChanged(tx: Tx, rows: readonly UserRow[]): Promise<void> {
    // Keyed by user: a second write of the same user in the transaction rebuilds once, from its newer row.
    for (const row of rows)
      tx.afterCommit(async () => {
        const created = this.createdBy.get(tx)?.has(row.id) === true;
        await Promise.all([this.refresh(row), ...(created ? [] : [this.authContexts.refreshUser(row.id)])]);
      }, `user:${row.id}`);
    return Promise.resolve();
  }
}
