import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AUTHORITY_FACTS } from '../access-model/access-facts.repository.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import { ApiError } from '../platform/http/api-error.js';

/** What a write needs to know about an authority it names in its body. */
export interface AuthorityReference {
  readonly id: number;
  readonly device_id: number;
  /** The user holding it, or null for a group's authority (v1.3). */
  readonly user_id: number | null;
  readonly group_id: number | null;
}

/** The devices and authorities named in other modules' request bodies; a missing one is its contract 404. */
@Injectable()
export class AuthorityReferences {
  /** A live (not deleted) authority; 404 `AUTHORITY_NOT_FOUND` otherwise. */
  async liveAuthority(db: EntityManager, id: number): Promise<AuthorityReference> {
    const [row] = await db.query<AuthorityReference[]>(
      'SELECT id, device_id, user_id, group_id FROM authorities WHERE id = $1 AND NOT is_deleted',
      [id],
    );
    if (row === undefined) throw ApiError.notFound('AUTHORITY_NOT_FOUND', id);
    return row;
  }

  /**
   * The user's authority on the device as layer 3c judges it, read in the caller's transaction
   * under a lock that a revocation, deactivation or permission grant on it waits for (and waits
   * behind): what the caller decides from it holds until its commit. Only authority permissions
   * whose expiry has not passed are listed. Undefined when the user has no authority there.
   */
  async lockedFacts(db: EntityManager, deviceId: number, userId: number): Promise<AuthorityFacts | undefined> {
    const [row] = await db.query<AuthorityFacts[]>(
      `SELECT ${AUTHORITY_FACTS} FROM authorities a WHERE a.device_id = $1 AND a.user_id = $2 FOR NO KEY UPDATE OF a`,
      [deviceId, userId],
    );
    return row;
  }

  /** The device exists; 404 `DEVICE_NOT_FOUND` otherwise. */
  async device(db: EntityManager, id: number): Promise<void> {
    const [row] = await db.query<{ id: number }[]>('SELECT id FROM devices WHERE id = $1', [id]);
    if (row === undefined) throw ApiError.notFound('DEVICE_NOT_FOUND', id);
  }
}
