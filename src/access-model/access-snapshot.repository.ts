import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sizedQuery } from '../platform/database/prepared.js';
import type { GrantFacts, GroupFacts, Subject } from '../platform/auth/auth-context.js';
import { groupGrant, type GroupGrantRow } from './access-facts.repository.js';
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
    const rows = await sizedQuery<{
      id: string;
      role_id: number;
      status_id: number;
      is_deleted: boolean;
      grants: HeldById[];
      group_grants: GroupGrantRow[];
      groups: GroupFacts[];
    }>(
      db,
      'access-subjects',
      // Set-based (each part aggregated by user, then joined): a snapshot of 100 000 users is one
      // recursion over their memberships, not 100 000.
      (ids) => `WITH chains AS MATERIALIZED (${usersGroupChains(ids, false)}),
       own AS (
         SELECT g.user_id, array_agg(json_build_object('id', g.id, 'permission_id', g.permission_id,
                  'expires_at', to_char(g.expires_at AT TIME ZONE 'UTC', ${ISO})) ORDER BY g.id) AS grants
         FROM permission_grants g WHERE g.user_id = ANY(${ids}) AND g.revoked_at IS NULL GROUP BY g.user_id),
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
       WHERE u.id = ANY(${ids}) ORDER BY u.id`,
      [...new Set(userIds)],
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
   * with its live authority permissions (of the scope's permissions only, when it names them). A
   * group's authorities are read once and handed to each of its members in `subjects` (their
   * groups, expired memberships included, are the chains this needs): a group of 100 000 members
   * is one row per authority, not one per member, and its members' chains are not walked twice.
   */
  async authorities(db: EntityManager, scope: AccessScope, subjects: readonly Subject[]): Promise<AuthorityFacts[]> {
    const groupIds = [...new Set(subjects.flatMap((subject) => (subject.groups ?? []).map((group) => group.group_id)))];
    const held = (column: string): string =>
      `ARRAY(SELECT ${column} FROM authority_permissions ap
              WHERE ap.authority_id = a.id AND ap.revoked_at IS NULL AND ($3::int[] IS NULL OR ap.permission_id = ANY($3::int[]))
              ORDER BY ap.id)`;
    const live = `($2::bigint[] IS NULL OR a.device_id = ANY($2::bigint[])) AND a.is_active AND a.revoked_at IS NULL AND NOT a.is_deleted`;
    const columns = `a.id, a.device_id, a.user_id, a.group_id, a.owner, a.is_active,
              to_char(a.expires_at AT TIME ZONE 'UTC', ${ISO}) AS expires_at,
              ${held('ap.permission_id')} AS held_ids, ${held(`to_char(ap.expires_at AT TIME ZONE 'UTC', ${ISO})`)} AS held_expiries`;
    // Planned for its own parameters every time, never prepared: the generic plan read every
    // authority (a parallel scan of a million rows, 115 ms) to find a new member's own ones, twice
    // a write, where the plan for the ids at hand takes 1 ms to make and 2 ms to run.
    const rows = await db.query<
      {
        own: boolean;
        id: string;
        device_id: string;
        user_id: string | null;
        group_id: string | null;
        owner: boolean;
        is_active: boolean;
        expires_at: string | null;
        held_ids: number[];
        held_expiries: (string | null)[];
      }[]
    >(
      `SELECT true AS own, ${columns} FROM authorities a WHERE a.user_id = ANY($1::bigint[]) AND ${live}
       UNION ALL
       SELECT false, ${columns} FROM authorities a WHERE a.group_id = ANY($4::bigint[]) AND ${live}`,
      [
        [...new Set(scope.users)],
        scope.devices === undefined ? null : [...new Set(scope.devices)],
        scope.permissions === undefined ? null : scope.permissions.map((code) => permissionIdOf(code) ?? 0),
        groupIds,
      ],
    );
    const own: AuthorityFacts[] = [];
    const ofGroup = new Map<number, AuthorityFacts[]>();
    for (const row of rows) {
      const authority: AuthorityFacts = {
        id: Number(row.id),
        device_id: Number(row.device_id),
        user_id: row.user_id === null ? null : Number(row.user_id),
        owner: row.owner,
        is_active: row.is_active,
        revoked: false,
        deleted: false,
        expires_at: row.expires_at,
        authority_permissions: row.held_ids.map((permissionId, index) => ({
          code: codeOf(permissionId),
          expires_at: row.held_expiries[index] ?? null,
        })),
      };
      if (row.own) own.push(authority);
      else if (row.group_id !== null) {
        // Pushed, not copied: a group may hold an authority on each of thousands of devices.
        const group = Number(row.group_id);
        const held = ofGroup.get(group);
        if (held === undefined) ofGroup.set(group, [authority]);
        else held.push(authority);
      }
    }
    const members = subjects.flatMap((subject) =>
      (subject.groups ?? []).flatMap((group) =>
        (ofGroup.get(group.group_id) ?? []).map((authority) => ({
          ...authority,
          user_id: subject.user_id,
          group_id: group.group_id,
          via: group.via,
          // Held through the chain only while both last (ISO instants of one format compare as text).
          expires_at: earlier(authority.expires_at, group.expires_at),
        })),
      ),
    );
    // By user, device and authority, as the rules and the events expect them.
    return [...own, ...members].sort(
      (a, b) => (a.user_id ?? 0) - (b.user_id ?? 0) || a.device_id - b.device_id || a.id - b.id,
    );
  }
}

/** The earlier of two ISO instants (null: never). */
function earlier(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return a < b ? a : b;
}
