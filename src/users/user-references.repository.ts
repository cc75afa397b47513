import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ApiError } from '../platform/http/api-error.js';
import { effectiveRoleSql } from '../access-model/group-facts.repository.js';

const EFFECTIVE_ROLE = effectiveRoleSql('users.id', 'users.role_id');

/** What a write needs to know about a user it names in its body. */
export interface UserReference {
  readonly id: number;
  readonly role_id: number;
  /** The role the rank rule judges: the highest of its own and its groups' (part 5). */
  readonly effective_role_id: number;
  readonly status_id: number;
  readonly is_deleted: boolean;
}

/** Whether a user named in a body exists, and is deleted. */
export interface UserPresence {
  readonly id: number;
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
      `SELECT id, role_id, ${EFFECTIVE_ROLE} AS effective_role_id, status_id, is_deleted FROM users WHERE id = $1`,
      [id],
    );
    return row;
  }

  /**
   * Many users at once (a change of members names up to 1000), by id, whether each exists and is
   * deleted; ids that never existed are absent. No effective role: its walk of every user's groups
   * cost a member PATCH of 100 users 5-10 ms for a value nobody read.
   */
  async presence(db: EntityManager, ids: readonly number[]): Promise<Map<number, UserPresence>> {
    if (ids.length === 0) return new Map();
    const rows = await db.query<UserPresence[]>('SELECT id, is_deleted FROM users WHERE id = ANY($1::bigint[])', [
      [...new Set(ids)],
    ]);
    return new Map(rows.map((row) => [Number(row.id), row]));
  }

  /** A live (not deleted) user; 404 `USER_NOT_FOUND` otherwise. */
  async liveUser(db: EntityManager, id: number): Promise<UserReference> {
    const user = await this.user(db, id);
    if (user === undefined || user.is_deleted) throw ApiError.notFound('USER_NOT_FOUND', id);
    return user;
  }
}
