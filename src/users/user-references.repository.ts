import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ApiError } from '../platform/http/api-error.js';

/** What a write needs to know about a user it names in its body. */
export interface UserReference {
  readonly id: number;
  readonly role_id: number;
  readonly status_id: number;
  readonly is_deleted: boolean;
}

/**
 * The users named in other modules' request bodies ("the user 42 of this body exists and is not
 * deleted"), as the users module answers them; a missing (or deleted) user is its contract 404.
 */
@Injectable()
export class UserReferences {
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
}
