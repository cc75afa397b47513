import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AuthContextService } from '../auth/auth-context.service.js';
import type { SessionRow } from '../auth/sessions.js';
import { CacheAside, type CachedRead } from '../cache/cache-aside.js';
import { cacheKeys } from '../cache/cache-keys.js';
import { CacheService } from '../cache/cache.service.js';
import { ApiError } from '../common/api-error.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import type { UserDto } from './dto/user.dto.js';

/** A users row as read: the resource plus its version (the ETag, kept out of the JSON). */
export interface UserRow extends UserDto {
  readonly version: number;
}

// `pin_hash` is never selected: only whether one is set.
const RESOURCE_COLUMNS = `id, email, display_name, phone, role_id, status_id, pin_hash IS NOT NULL AS pin_set, pin_reset_at,
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;
export const USER_COLUMNS = `version, ${RESOURCE_COLUMNS}`;

export const USER_LIST: ListSpec = {
  from: 'users',
  select: RESOURCE_COLUMNS,
  idColumn: 'id',
  sort: { id: 'id', email: 'email', display_name: 'display_name', created_at: 'created_at', updated_at: 'updated_at' },
  defaultSort: 'id:asc',
  filters: { status_id: { column: 'status_id', type: 'int' }, role_id: { column: 'role_id', type: 'int' } },
  search: ['email', 'display_name'],
  deletedColumn: 'is_deleted',
};

export function userNotFound(id: number): ApiError {
  return new ApiError('USER_NOT_FOUND', `User ${id} does not exist`, { user_id: id });
}

export function toResource(row: UserRow): UserDto {
  const { version: _version, ...user } = row;
  return user;
}

function entryOf(row: UserRow): { version: number; deleted: boolean; json: string } {
  return { version: row.version, deleted: row.is_deleted, json: JSON.stringify(toResource(row)) };
}

/** Row access for users: locked reads inside a write, cached detail reads, post-commit rebuilds. */
@Injectable()
export class UsersRepository {
  private readonly cached: CacheAside;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly authContexts: AuthContextService,
    cache: CacheService,
  ) {
    this.cached = new CacheAside(cache, (id) => cacheKeys.resource('user', id), async (id) => {
      const row = await this.find(this.uow.reader, id);
      return row === undefined ? undefined : entryOf(row);
    });
  }

  get reader(): EntityManager {
    return this.uow.reader;
  }

  read(id: number): Promise<CachedRead | undefined> {
    return this.cached.get(id);
  }

  async find(db: EntityManager, id: number): Promise<UserRow | undefined> {
    const [row] = await db.query<UserRow[]>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
    return row;
  }

  /** The row under `FOR UPDATE`, deleted or not; 404 when it does not exist. */
  async lock(tx: Tx, id: number): Promise<UserRow> {
    const [row] = await tx.db.query<UserRow[]>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1 FOR UPDATE`, [id]);
    if (row === undefined) throw userNotFound(id);
    return row;
  }

  /** As `lock`, but a deleted user is a 404 too (every action except restore). */
  async lockLive(tx: Tx, id: number): Promise<UserRow> {
    const row = await this.lock(tx, id);
    if (row.is_deleted) throw userNotFound(id);
    return row;
  }

  /** Runs `UPDATE users SET <assignments> WHERE id = $1 RETURNING …`; `$1` is the id. */
  async update(tx: Tx, id: number, assignments: string, params: readonly unknown[]): Promise<UserRow> {
    const [rows] = await tx.db.query<[UserRow[], number]>(`UPDATE users SET ${assignments} WHERE id = $1 RETURNING ${USER_COLUMNS}`, [id, ...params]);
    const row = rows[0];
    if (row === undefined) throw userNotFound(id);
    return row;
  }

  /** After commit: the detail entry and the auth context's user entry, both at the new version. */
  rebuildAfterCommit(tx: Tx, row: UserRow, revokedSessions: readonly SessionRow[] = []): void {
    tx.afterCommit(async () => {
      await Promise.all([
        this.cached.refresh(row.id, entryOf(row)),
        this.authContexts.refreshUser(row.id),
        this.authContexts.refreshSessions(revokedSessions),
      ]);
    });
  }
}
