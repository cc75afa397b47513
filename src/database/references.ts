import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ApiError } from '../common/api-error.js';

/** What a write needs to know about a user it names in its body. */
export interface UserReference {
  readonly id: number;
  readonly role_id: number;
  readonly status_id: number;
  readonly is_deleted: boolean;
}

/** What a write needs to know about an authority it names in its body. */
export interface AuthorityReference {
  readonly id: number;
  readonly device_id: number;
  readonly user_id: number;
}

/** What a write needs to know about a permission it names in its body. */
export interface PermissionReference {
  readonly id: number;
  readonly code: string;
  readonly device_scoped: boolean;
}

/**
 * Records named in request bodies, looked up by the writes of every domain ("the user 42 of this
 * body exists and is not deleted"): one place for these lookups instead of a copy per service.
 * A missing (or deleted) record is its contract 404.
 */
@Injectable()
export class References {
  /** The user, deleted or not; undefined when it never existed. */
  async user(db: EntityManager, id: number): Promise<UserReference | undefined> {
    const [row] = await db.query<UserReference[]>(
      'SELECT id, role_id, status_id, is_deleted FROM users WHERE id = $1',
      [id],
    );
    return row;
  }

  /** A live (not deleted) user; 404 `USER_NOT_FOUND` otherwise. */
  async liveUser(db: EntityManager, id: number): Promise<UserReference> {
    const user = await this.user(db, id);
    if (user === undefined || user.is_deleted) throw ApiError.notFound('USER_NOT_FOUND', id);
    return user;
  }

  /** The permission of the catalogue; 404 `PERMISSION_NOT_FOUND` otherwise. */
  async permission(db: EntityManager, id: number): Promise<PermissionReference> {
    const [row] = await db.query<PermissionReference[]>(
      'SELECT id, code, device_scoped FROM permissions WHERE id = $1',
      [id],
    );
    if (row === undefined) throw ApiError.notFound('PERMISSION_NOT_FOUND', id);
    return row;
  }

  /** A live (not deleted) authority; 404 `AUTHORITY_NOT_FOUND` otherwise. */
  async liveAuthority(db: EntityManager, id: number): Promise<AuthorityReference> {
    const [row] = await db.query<AuthorityReference[]>(
      'SELECT id, device_id, user_id FROM authorities WHERE id = $1 AND NOT is_deleted',
      [id],
    );
    if (row === undefined) throw ApiError.notFound('AUTHORITY_NOT_FOUND', id);
    return row;
  }

  /** The device exists; 404 `DEVICE_NOT_FOUND` otherwise. */
  async device(db: EntityManager, id: number): Promise<void> {
    const [row] = await db.query<{ id: number }[]>('SELECT id FROM devices WHERE id = $1', [id]);
    if (row === undefined) throw ApiError.notFound('DEVICE_NOT_FOUND', id);
  }
}
