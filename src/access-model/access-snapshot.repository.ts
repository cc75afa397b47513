import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { GrantFacts, GroupFacts, Subject } from '../platform/auth/auth-context.js';
import { groupGrant, normalisedAuthority, type GroupGrantRow } from './access-facts.repository.js';
import { normalisedGroup, usersGroupChains } from './group-facts.repository.js';
import { effectiveRole } from './group-rules.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import { permissionCodeOf, permissionIdOf } from '../platform/auth/permissions.js';
import { USER_STATUS } from '../platform/auth/roles.js';

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/** A grant or an authority permission as read: its permission by id (the catalogue's ids are fixed). */
interface HeldById {
  readonly id?: number | string;
  readonly permission_id: number;
  readonly expires_at: string | null;
}

// The catalogue is read from code, not from the `permissions` table: a write's watch must not wait
// on that table (nothing changes it; a lock on it must not stall writes that do not touch it).
const codeOf = (id: number): string => permissionCodeOf(id) ?? `unknown:${id}`;

/**
 * Which facts a snapshot reads: some users, on some devices (undefined: all of theirs), and which
 * permissions it judges (undefined: all; a write of one permission can change no other).
 */
export interface AccessScope {
  readonly users: readonly number[];
  readonly devices?: readonly number[];
  readonly permissions?: readonly string[];
  /** The users were created by this transaction: before it they held nothing, and nothing is read for that side. */
  readonly created?: boolean;
}

/**
 * The facts behind an access snapshot (`access-changes.ts`), read through the caller's manager:
 * inside a write's transaction they include its own changes. Expired grants and authority
 * permissions are read too (unless revoked), with their expiry: the rules judge it at the moment
 * asked, so one read serves a moment just before an expiry and the moment of it.
 */
@Injectable()
export class AccessSnapshotRepository {
  /**
   * The users' subjects, their effective roles judged at `at` (the moment the rules will judge
   * them at); a user that does not exist has none. Groups and their grants are read with expired
   * memberships too, like expired grants.
   */
  async subjects(db: EntityManager, userIds: readonly number[], at = Date.now()): Promise<Subject[]> {
    const rows = await db.query<
      {
        id: string;
        role_id: number;
        status_id: number;
        is_deleted: boolean;
        grants: HeldById[];
        group_grants: GroupGrantRow[];
        groups: GroupFacts[];
      }[]
    >(
      // Set-based (each part aggregated by user, then joined): a snapshot of 100 000 users is one
      // recursion over their memberships, not 100 000.
      `WITH chains AS MATERIALIZED (${usersGroupChains('$1::bigint[]', false)}),
       own AS (
         SELECT g.user_id, array_agg(json_build_object('id', g.id, 'permission_id', g.permission_id,
                  'expires_at', to_char(g.expires_at AT TIME ZONE 'UTC', ${ISO})) ORDER BY g.id) AS grants
         FROM permission_grants g WHERE g.user_id = ANY($1::bigint[]) AND g.revoked_at IS NULL GROUP BY g.user_id),
       reached AS (
         SELECT c.user_id, json_agg(json_build_object('group_id', c.group_id, 'role_id', c.role_id, 'via', c.via,
                  'expires_at', to_char(c.expires_at AT TIME ZONE 'UTC', ${ISO})) ORDER BY c.group_id) AS groups
         FROM chains c GROUP BY c.user_id),
       held AS (
         SELECT c.user_id, json_agg(json_build_object('id', pg.id, 'permission_id', pg.permission_id,
                  'expires_at', to_char(least(pg.expires_at, c.expires_at) AT TIME ZONE 'UTC', ${ISO}),
                  'group_id', c.group_id, 'via', c.via) ORDER BY pg.id) AS group_grants
         FROM chains c JOIN permission_grants pg ON pg.group_id = c.group_id AND pg.revoked_at IS NULL GROUP BY c.user_id)
       SELECT u.id, u.role_id, u.status_id, u.is_deleted, coalesce(own.grants, '{}'::json[]) AS grants,
              coalesce(held.group_grants, '[]'::json) AS group_grants, coalesce(reached.groups, '[]'::json) AS groups
       FROM users u LEFT JOIN own ON own.user_id = u.id LEFT JOIN reached ON reached.user_id = u.id
       LEFT JOIN held ON held.user_id = u.id
       WHERE u.id = ANY($1::bigint[]) ORDER BY u.id`,
      [[...new Set(userIds)]],
    );
    return rows.flatMap((row) => {
      const groups = row.groups.map(normalisedGroup);
      const { role, group_id } = effectiveRole(row.role_id, groups, at);
      if (role === undefined) return [];
      const active = row.status_id === USER_STATUS.active && !row.is_deleted;
      const grants: GrantFacts[] = [
        ...row.grants.map((g) => ({ id: Number(g.id), code: codeOf(g.permission_id), expires_at: g.expires_at })),
        ...row.group_grants.map(groupGrant),
      ];
      return [{ user_id: Number(row.id), role, role_group_id: group_id, groups, active, grants }];
    });
  }

  /**
   * The users' effective-looking authorities (active, not revoked, not deleted) in the scope, each
   * with its live authority permissions (of the scope's permissions only, when it names them).
   */
  async authorities(db: EntityManager, scope: AccessScope): Promise<AuthorityFacts[]> {
    const held = (column: string): string =>
      `ARRAY(SELECT ${column} FROM authority_permissions ap
              WHERE ap.authority_id = a.id AND ap.revoked_at IS NULL AND ($3::int[] IS NULL OR ap.permission_id = ANY($3::int[]))
              ORDER BY ap.id)`;
    const rows = await db.query<
      (Omit<AuthorityFacts, 'authority_permissions'> & { held_ids: number[]; held_expiries: (string | null)[] })[]
    >(
      `SELECT a.id, a.device_id, a.user_id, NULL::bigint AS group_id, NULL::bigint[] AS via, a.owner, a.is_active,
              false AS revoked, false AS deleted, to_char(a.expires_at AT TIME ZONE 'UTC', ${ISO}) AS expires_at,
              ${held('ap.permission_id')} AS held_ids,
              ${held(`to_char(ap.expires_at AT TIME ZONE 'UTC', ${ISO})`)} AS held_expiries
       FROM authorities a
       WHERE a.user_id = ANY($1::bigint[]) AND ($2::bigint[] IS NULL OR a.device_id = ANY($2::bigint[]))
         AND a.is_active AND a.revoked_at IS NULL AND NOT a.is_deleted
       UNION ALL
       SELECT a.id, a.device_id, c.user_id, a.group_id, c.via, a.owner, a.is_active,
              false, false, to_char(least(a.expires_at, c.expires_at) AT TIME ZONE 'UTC', ${ISO}),
              ${held('ap.permission_id')}, ${held(`to_char(ap.expires_at AT TIME ZONE 'UTC', ${ISO})`)}
       FROM (${usersGroupChains('$1::bigint[]', false)}) c
       JOIN authorities a ON a.group_id = c.group_id
       WHERE ($2::bigint[] IS NULL OR a.device_id = ANY($2::bigint[]))
         AND a.is_active AND a.revoked_at IS NULL AND NOT a.is_deleted
       ORDER BY 3, 2, 1`,
      [
        [...new Set(scope.users)],
        scope.devices === undefined ? null : [...new Set(scope.devices)],
        scope.permissions === undefined ? null : scope.permissions.map((code) => permissionIdOf(code) ?? 0),
      ],
    );
    return rows.map(({ held_ids, held_expiries, ...row }) => ({
      ...normalisedAuthority({ ...row, authority_permissions: [] }),
      authority_permissions: held_ids.map((permissionId, index) => ({
        code: codeOf(permissionId),
        expires_at: held_expiries[index] ?? null,
      })),
    }));
  }
}
