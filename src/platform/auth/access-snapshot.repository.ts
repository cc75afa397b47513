import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { GrantFacts, Subject } from './auth-context.js';
import type { AuthorityFacts } from './authority-facts.js';
import { roleById, USER_STATUS } from './roles.js';

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/** Which facts a snapshot reads: some users, on some devices (undefined: all of theirs). */
export interface AccessScope {
  readonly users: readonly number[];
  readonly devices?: readonly number[];
}

/**
 * The facts behind an access snapshot (`access-changes.ts`), read through the caller's manager:
 * inside a write's transaction they include its own changes. Expired grants and authority
 * permissions are read too (unless revoked), with their expiry: the rules judge it at the moment
 * asked, so one read serves a moment just before an expiry and the moment of it.
 */
@Injectable()
export class AccessSnapshotRepository {
  /** The users' subjects; a user that does not exist has none. */
  async subjects(db: EntityManager, userIds: readonly number[]): Promise<Subject[]> {
    const rows = await db.query<
      { id: string; role_id: number; status_id: number; is_deleted: boolean; grants: GrantFacts[] }[]
    >(
      `SELECT u.id, u.role_id, u.status_id, u.is_deleted,
              ARRAY(SELECT json_build_object('id', g.id, 'code', p.code, 'expires_at', to_char(g.expires_at AT TIME ZONE 'UTC', ${ISO}))
                    FROM permission_grants g JOIN permissions p ON p.id = g.permission_id
                    WHERE g.user_id = u.id AND g.revoked_at IS NULL ORDER BY g.id) AS grants
       FROM users u WHERE u.id = ANY($1::bigint[]) ORDER BY u.id`,
      [[...new Set(userIds)]],
    );
    return rows.flatMap((row) => {
      const role = roleById(row.role_id);
      if (role === undefined) return [];
      const active = row.status_id === USER_STATUS.active && !row.is_deleted;
      return [{ user_id: Number(row.id), role, active, grants: row.grants.map((g) => ({ ...g, id: Number(g.id) })) }];
    });
  }

  /** The users' effective-looking authorities (active, not revoked, not deleted) in the scope. */
  authorities(db: EntityManager, scope: AccessScope): Promise<AuthorityFacts[]> {
    const devices = scope.devices === undefined ? '' : 'AND a.device_id = ANY($2::bigint[])';
    return db
      .query<AuthorityFacts[]>(
        `SELECT a.id, a.device_id, a.user_id, a.owner, a.is_active, false AS revoked, false AS deleted,
                to_char(a.expires_at AT TIME ZONE 'UTC', ${ISO}) AS expires_at,
                ARRAY(SELECT json_build_object('code', p.code, 'expires_at', to_char(ap.expires_at AT TIME ZONE 'UTC', ${ISO}))
                      FROM authority_permissions ap JOIN permissions p ON p.id = ap.permission_id
                      WHERE ap.authority_id = a.id AND ap.revoked_at IS NULL ORDER BY p.code) AS authority_permissions
         FROM authorities a
         WHERE a.user_id = ANY($1::bigint[]) AND a.is_active AND a.revoked_at IS NULL AND NOT a.is_deleted ${devices}
         ORDER BY a.user_id, a.device_id`,
        scope.devices === undefined
          ? [[...new Set(scope.users)]]
          : [[...new Set(scope.users)], [...new Set(scope.devices)]],
      )
      .then((rows) =>
        rows.map((row) => ({
          ...row,
          id: Number(row.id),
          device_id: Number(row.device_id),
          user_id: Number(row.user_id),
        })),
      );
  }
}
