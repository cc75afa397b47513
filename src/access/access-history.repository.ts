import { MAX_GROUP_DEPTH } from '../access-model/group-rules.js';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { GrantFacts, GroupFacts } from '../platform/auth/auth-context.js';
import { normalisedGroup } from '../access-model/group-facts.repository.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import { USER_STATUS } from '../platform/auth/roles.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';

/** A user's standing at a moment: the facts the rules need, not yet judged. */
export interface UserFactsAt {
  readonly user_id: number;
  readonly role_id: number;
  readonly status_id: number;
  readonly is_deleted: boolean;
  /** Grants held at the moment (granted, not yet revoked); their expiry is judged by the rules. */
  readonly grants: GrantFacts[];
  /** The groups the user belonged to at the moment (one lasting chain each), with their roles then. */
  readonly groups?: GroupFacts[];
  /** The grants its groups held then, as the rules take them (`group_id`, `via`, the chain's expiry). */
  readonly group_grants?: GrantFacts[];
}

/** Every version of what decides a device's authority layer, oldest first (µs instants). */
export interface DeviceHistory {
  readonly authorities: readonly {
    readonly authority_id: number;
    /** The holder: a user, or a group (`group_id`, fixed for the authority's life). */
    readonly user_id: number | null;
    readonly group_id: number | null;
    readonly owner: boolean;
    readonly is_active: boolean;
    readonly revoked: boolean;
    readonly is_deleted: boolean;
    readonly expires_at: number | null;
    readonly from: number;
    readonly xid: string;
    readonly actor_id: number | null;
  }[];
  readonly permissions: readonly {
    readonly authority_permission_id: number;
    readonly authority_id: number;
    readonly code: string;
    readonly is_active: boolean;
    /** µs, or null: never (versions from before permissions could expire have none). */
    readonly expires_at: number | null;
    readonly from: number;
    readonly xid: string;
    readonly actor_id: number | null;
  }[];
  readonly users: readonly {
    readonly user_id: number;
    readonly role_id: number;
    readonly status_id: number;
    readonly is_deleted: boolean;
    readonly from: number;
    readonly xid: string;
    readonly actor_id: number | null;
  }[];
  /** The versions of the memberships through which users reach the groups holding authorities here, or their roles. */
  readonly memberships: readonly {
    readonly membership_id: number;
    readonly group_id: number;
    readonly user_id: number | null;
    readonly member_group_id: number | null;
    readonly is_active: boolean;
    readonly expires_at: number | null;
    readonly from: number;
    readonly xid: string;
    readonly actor_id: number | null;
  }[];
  /** The versions of those groups (role, deletion). */
  readonly groups: readonly {
    readonly group_id: number;
    readonly role_id: number | null;
    readonly is_deleted: boolean;
    readonly from: number;
    readonly xid: string;
    readonly actor_id: number | null;
  }[];
  /**
   * The feed events of those versions' transactions: `${xid}/${resource_type}/${resource_id}` →
   * event, and `${xid}` → the transaction's first event (a transfer is one `device` event).
   */
  readonly events: ReadonlyMap<string, { readonly id: string; readonly actor_id: number | null }>;
}

/** One page of candidate ids with the number of them all, and the moment they were judged at. */
/** What decides who may act on a device (the device question of part 6.13), without the page. */
export interface DeviceAccessAsked {
  readonly deviceId: number;
  readonly permissionId: number;
  readonly roleIds: readonly number[];
  readonly adminRoleIds: readonly number[];
  readonly via: ReadonlySet<string>;
  /**
   * Only ways through that group (`group_id=`): users it reaches, by a right or a role held by
   * it or by a group it sits in (directly or through others) at T. Null: any way.
   */
  readonly groupId: number | null;
  /** Null: now. */
  readonly moment: Date | null;
  readonly direction: 'asc' | 'desc';
}

export interface CandidatePage {
  readonly ids: number[];
  readonly total: number;
  readonly moment: Date;
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/*
 * "As of $T" for each history table: the newest version at or before T (ties by id). Trusted
 * text; `$T` is the statement's moment parameter, written in as `%T`.
 */
export const USER_VERSION_AT = `(SELECT h.role_id, h.status_id, h.is_deleted FROM user_access_history h
   WHERE h.user_id = %U AND h.valid_from <= %T ORDER BY h.valid_from DESC, h.id DESC LIMIT 1)`;
/**
 * Authority permission versions of authority %A at %T (the newest version of each row); `held`
 * says whether it allowed then: active and not yet expired.
 */
const PERMISSIONS_HELD_AT = `(SELECT DISTINCT ON (ph.authority_permission_id) ph.permission_id, ph.expires_at,
     ph.is_active AND (ph.expires_at IS NULL OR ph.expires_at > %T) AS held
   FROM authority_permission_history ph WHERE ph.authority_id = %A AND ph.valid_from <= %T
   ORDER BY ph.authority_permission_id, ph.valid_from DESC, ph.id DESC)`;
const EFFECTIVE = (alias: string): string =>
  `${alias}.is_active AND NOT ${alias}.revoked AND NOT ${alias}.is_deleted AND (${alias}.expires_at IS NULL OR ${alias}.expires_at > %T)`;

/**
 * Writes the moment parameter (`$n`) in for `%T`. A moment is asked to the millisecond, as the API
 * shows times, and means the end of that millisecond: a change shown at 14:00:00.821 (its version
 * began at 14:00:00.821225) is in the answer at 14:00:00.821, and an expiry is judged the same way
 * in SQL as by the rules, which read expiries to the millisecond.
 */
export function at(sql: string, parameter: string): string {
  return sql.replaceAll('%T', `(${momentOf(parameter)} + interval '999 microseconds')`);
}

/** The moment parameter, or (null) the database's now, to the millisecond. */
export const momentOf = (parameter: string): string =>
  `coalesce(${parameter}::timestamptz, date_trunc('milliseconds', now()))`;

/**
 * Reads of the access history (migration `access-history`): the facts that decide access as they
 * were at a moment T. "Now" is the database's own `now()`, taken once per question, so a question
 * asked after a write's response always sees that write (its versions start at its transaction's
 * start). The rules are applied by the caller (`access-rules.ts`); the candidate queries here
 * narrow with the same conditions so that pages and totals are right.
 */
/**
 * Trusted text (in `admissible` of the device question): the effective role `e` comes through group
 * $5 at T: it outranks the user's own, the group conferring it as the rules name it (the
 * lowest-numbered of the user's groups at T that carry it) is $5 or a group above it (`through`),
 * and $5 reaches the user.
 */
/** Trusted text: the effective role at T of candidate `c` whose version at T is `u`. */
const EFFECTIVE_ROLE = `least(u.role_id, (SELECT min(gr.role_id) FROM user_groups_at(c.user_id, %T) gr))`;

const ROLE_FROM_GROUP = `${EFFECTIVE_ROLE} < u.role_id
  AND (SELECT min(gr.group_id) FROM user_groups_at(c.user_id, %T) gr WHERE gr.role_id = ${EFFECTIVE_ROLE})
    IN (SELECT group_id FROM through)
  AND c.user_id IN (SELECT r.user_id FROM group_users_at($5::bigint, %T) r)`;

/** Trusted text: with a group asked for ($5), the user `r` is one it reaches at T. */
export const REACHED_BY_ASKED = `($5::bigint IS NULL OR r.user_id IN (SELECT x.user_id FROM group_users_at($5::bigint, %T) x))`;

/**
 * Trusted text: `through`, the group asked for (`$5`) and the groups it sits in at T (directly or
 * through others, live), for a `WITH RECURSIVE`; empty without a group asked for.
 */
export const THROUGH = `through(group_id, depth) AS (
         SELECT $5::bigint, 1 WHERE $5::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM group_role_at($5::bigint, %T))
         UNION
         SELECT m.group_id, t.depth + 1 FROM through t CROSS JOIN LATERAL group_memberships_at(t.group_id, %T) m
         WHERE t.depth < ${MAX_GROUP_DEPTH})`;

/** Trusted text: the groups that conferred one of the roles `$3` at or before T (within `through` with `$5`). */
export const ROLE_GROUPS = `SELECT DISTINCT gh.group_id FROM group_history gh
           WHERE cardinality($3::int[]) > 0 AND gh.role_id = ANY($3::int[]) AND gh.valid_from <= %T
             AND ($5::bigint IS NULL OR gh.group_id IN (SELECT group_id FROM through))`;

/**
 * Trusted text: whether candidate `c` (its version at T `u`) may act on the device at T: active,
 * not deleted, with admin access, and allowed by another way (`byOtherWay`) or else by its
 * effective role.
 */
export function admissible(byOtherWay: string): string {
  return `u.status_id = ${USER_STATUS.active} AND NOT u.is_deleted
           -- Admin access by the effective role: the roles with it are a prefix of the ranks, so its
           -- own role or one of its groups' has it. The groups are read only when the own role has not.
           AND (u.role_id = ANY($4::int[])
                OR EXISTS (SELECT 1 FROM user_groups_at(c.user_id, %T) gr WHERE gr.role_id = ANY($4::int[])))
           -- Allowed by another way, or else by the effective role (its groups read only then).
           AND (${byOtherWay}
                OR (${EFFECTIVE_ROLE} = ANY($3::int[]) AND ($5::bigint IS NULL OR ${ROLE_FROM_GROUP})))`;
}

/**
 * Trusted text: the users' own ways to `$2` on device `$1` at T (grants, authorities on the
 * device), each a `SELECT user_id`; none with a group asked for (`$5`). The authorities' part is
 * always present (it names the device, so every parameter is typed); without its ways it matches
 * nobody.
 */
export function ownWays(via: ReadonlySet<string>): string[] {
  const ways: string[] = [];
  if (via.has('permission_grant'))
    ways.push(`SELECT g.user_id FROM permission_grants g WHERE $5::bigint IS NULL AND g.permission_id = $2 AND g.user_id IS NOT NULL AND g.granted_at <= %T
          AND (g.revoked_at IS NULL OR g.revoked_at > %T) AND (g.expires_at IS NULL OR g.expires_at > %T)`);
  const byOwner = via.has('device_owner');
  const byPermission = via.has('authority_permission');
  ways.push(`SELECT a.user_id FROM (
          SELECT DISTINCT ON (h.authority_id) h.* FROM authority_history h WHERE h.device_id = $1 AND h.valid_from <= %T
          ORDER BY h.authority_id, h.valid_from DESC, h.id DESC) a
        WHERE $5::bigint IS NULL AND a.user_id IS NOT NULL AND ${EFFECTIVE('a')} AND (${byOwner ? 'a.owner' : 'false'} OR (${byPermission ? 'true' : 'false'} AND EXISTS (
          SELECT 1 FROM ${PERMISSIONS_HELD_AT.replace('%A', 'a.authority_id')} x WHERE x.held AND x.permission_id = $2)))`);
  return ways;
}

/**
 * Trusted text: the groups holding `$2` on device `$1` at T (a grant, or an effective authority on
 * the device holding it), each a `SELECT group_id`; with a group asked for (`$5`), only it and the
 * groups above it (`through`).
 */
export function holdingGroups(via: ReadonlySet<string>): string[] {
  const holding: string[] = [];
  if (via.has('group_permission_grant'))
    holding.push(`SELECT g.group_id FROM permission_grants g WHERE g.permission_id = $2 AND g.group_id IS NOT NULL
          AND ($5::bigint IS NULL OR g.group_id IN (SELECT group_id FROM through))
          AND g.granted_at <= %T AND (g.revoked_at IS NULL OR g.revoked_at > %T) AND (g.expires_at IS NULL OR g.expires_at > %T)`);
  if (via.has('group_authority_permission'))
    holding.push(`SELECT au.group_id FROM (
          SELECT DISTINCT ON (h.authority_id) h.* FROM authority_history h WHERE h.device_id = $1 AND h.valid_from <= %T
          ORDER BY h.authority_id, h.valid_from DESC, h.id DESC) a JOIN authorities au ON au.id = a.authority_id
        WHERE a.user_id IS NULL AND ($5::bigint IS NULL OR au.group_id IN (SELECT group_id FROM through))
          AND ${EFFECTIVE('a')} AND EXISTS (
          SELECT 1 FROM ${PERMISSIONS_HELD_AT.replace('%A', 'a.authority_id')} x WHERE x.held AND x.permission_id = $2)`);
  return holding;
}

/**
 * Reads inside one snapshot of the device question (DeviceAccessWindowsRepository): each statement
 * is prepared on that connection under `name` and run with its generic plan, so a statement asked
 * for every page is planned once per connection (planning was half of a page's users read).
 */
export interface SnapshotReader {
  query<T>(name: string, text: string, values: unknown[]): Promise<T[]>;
}

@Injectable()
export class AccessHistoryRepository {
  private startsAt: Date | undefined;

  constructor(private readonly uow: UnitOfWork) {}

  private get db(): EntityManager {
    return this.uow.reader;
  }

  /** When the history begins (the migration that introduced it). */
  async historyStart(): Promise<Date> {
    if (this.startsAt === undefined) {
      const [row] = await this.db.query<{ started_at: Date }[]>('SELECT started_at FROM access_history_start');
      if (row === undefined) throw new Error('access_history_start has no row: migration access-history not applied');
      this.startsAt = row.started_at;
    }
    return this.startsAt;
  }

  /** The database's present moment, the "now" of a question asked without `at`. */
  async now(): Promise<Date> {
    const [row] = await this.db.query<{ now: Date }[]>('SELECT now() AS now');
    return row?.now ?? new Date();
  }

  /** When a device was created (devices are never deleted), or undefined for an unknown one. */
  async deviceCreatedAt(deviceId: number): Promise<Date | undefined> {
    const [row] = await this.db.query<{ created_at: Date }[]>('SELECT created_at FROM devices WHERE id = $1', [
      deviceId,
    ]);
    return row?.created_at;
  }

  /**
   * The users' standing at T (absent: the user did not exist yet); inside a snapshot, when one is
   * given. Each user's groups at T are walked once (`user_groups_at`), for its groups and for what
   * they were granted.
   */
  async usersAt(
    userIds: readonly number[],
    moment: Date,
    snapshot?: SnapshotReader,
  ): Promise<Map<number, UserFactsAt>> {
    if (userIds.length === 0) return new Map();
    const text = at(
      `WITH asked AS (SELECT DISTINCT u.id FROM unnest($1::bigint[]) AS u(id)),
         reached AS MATERIALIZED (
           SELECT a.id AS user_id, c.group_id, c.role_id, c.via, c.expires_at
           FROM asked a CROSS JOIN LATERAL user_groups_at(a.id, %T) c)
       SELECT u.id AS user_id, v.role_id, v.status_id, v.is_deleted,
              ARRAY(SELECT json_build_object('id', g.id, 'code', p.code, 'expires_at', to_char(g.expires_at AT TIME ZONE 'UTC', ${ISO}))
                    FROM permission_grants g JOIN permissions p ON p.id = g.permission_id
                    WHERE g.user_id = u.id AND g.granted_at <= %T AND (g.revoked_at IS NULL OR g.revoked_at > %T)
                    ORDER BY g.id) AS grants,
              (SELECT coalesce(json_agg(json_build_object('group_id', c.group_id, 'role_id', c.role_id, 'via', c.via,
                        'expires_at', to_char(c.expires_at AT TIME ZONE 'UTC', ${ISO})) ORDER BY c.group_id), '[]'::json)
               FROM reached c WHERE c.user_id = u.id) AS groups,
              (SELECT coalesce(json_agg(json_build_object('id', g.id, 'code', p.code, 'group_id', c.group_id, 'via', c.via,
                        'expires_at', to_char(least(g.expires_at, c.expires_at) AT TIME ZONE 'UTC', ${ISO})) ORDER BY g.id), '[]'::json)
               FROM reached c JOIN permission_grants g ON g.group_id = c.group_id
               JOIN permissions p ON p.id = g.permission_id
               WHERE c.user_id = u.id AND g.granted_at <= %T AND (g.revoked_at IS NULL OR g.revoked_at > %T)) AS group_grants
       FROM asked u CROSS JOIN LATERAL ${USER_VERSION_AT.replace('%U', 'u.id')} v`,
      '$2',
    );
    const values = [[...new Set(userIds)], moment];
    const rows =
      snapshot === undefined
        ? await this.db.query<UserFactsAt[]>(text, values)
        : await snapshot.query<UserFactsAt>('users-at', text, values);
    return new Map(
      rows.map((row) => [
        Number(row.user_id),
        {
          ...row,
          user_id: Number(row.user_id),
          groups: (row.groups ?? []).map(normalisedGroup),
          group_grants: (row.group_grants ?? []).map((grant) => ({
            ...grant,
            id: Number(grant.id),
            group_id: Number(grant.group_id),
            via: (grant.via ?? []).map(Number),
          })),
        },
      ]),
    );
  }

  /** The authorities on a device at T (only those of `userIds`, when given), with their permissions then. */
  async deviceAuthoritiesAt(
    deviceId: number,
    moment: Date,
    userIds?: readonly number[],
    snapshot?: SnapshotReader,
  ): Promise<AuthorityFacts[]> {
    // A group's authorities (no user) are the members' too: the caller sees which through their groups.
    const only = userIds === undefined ? '' : 'AND (h.user_id = ANY($3::bigint[]) OR h.user_id IS NULL)';
    return this.authorityFacts(
      `SELECT DISTINCT ON (h.authority_id) h.* FROM authority_history h
       WHERE h.device_id = $1 AND h.valid_from <= %T ${only}
       ORDER BY h.authority_id, h.valid_from DESC, h.id DESC`,
      userIds === undefined ? [deviceId, moment] : [deviceId, moment, [...userIds]],
      snapshot,
    );
  }

  /**
   * Every authority on these devices that the user held at T, its own or a group's (which of the
   * groups' it held then is the rules' to tell, through its groups then), with their permissions then.
   */
  userAuthoritiesOnDevicesAt(userId: number, deviceIds: readonly number[], moment: Date): Promise<AuthorityFacts[]> {
    return this.authorityFacts(
      `SELECT DISTINCT ON (h.authority_id) h.* FROM authority_history h
       WHERE h.device_id = ANY($1::bigint[]) AND (h.user_id = $3 OR h.user_id IS NULL) AND h.valid_from <= %T
       ORDER BY h.authority_id, h.valid_from DESC, h.id DESC`,
      [[...new Set(deviceIds)], moment, userId],
    );
  }

  /** The given authorities at T, with their permissions then. */
  authoritiesAt(authorityIds: readonly number[], moment: Date): Promise<AuthorityFacts[]> {
    return this.authorityFacts(
      `SELECT v.* FROM unnest($1::bigint[]) AS c(id) CROSS JOIN LATERAL (
         SELECT h.* FROM authority_history h WHERE h.authority_id = c.id AND h.valid_from <= %T
         ORDER BY h.valid_from DESC, h.id DESC LIMIT 1) v`,
      [[...authorityIds], moment],
    );
  }

  private async authorityFacts(
    versions: string,
    params: unknown[],
    snapshot?: SnapshotReader,
  ): Promise<AuthorityFacts[]> {
    const text = at(
      `SELECT a.authority_id AS id, a.device_id, a.user_id,
                (SELECT g.group_id FROM authorities g WHERE g.id = a.authority_id) AS group_id,
                a.owner, a.is_active, a.revoked, a.is_deleted AS deleted,
                to_char(a.expires_at AT TIME ZONE 'UTC', ${ISO}) AS expires_at,
                ARRAY(SELECT json_build_object('code', p.code, 'expires_at', to_char(x.expires_at AT TIME ZONE 'UTC', ${ISO}))
                      FROM ${PERMISSIONS_HELD_AT.replace('%A', 'a.authority_id')} x
                      JOIN permissions p ON p.id = x.permission_id WHERE x.held ORDER BY p.code) AS authority_permissions
         FROM (${versions}) a ORDER BY a.authority_id`,
      '$2',
    );
    const rows =
      snapshot === undefined
        ? await this.db.query<AuthorityFacts[]>(text, params)
        : await snapshot.query<AuthorityFacts>('authorities-at', text, params);
    return rows.map((row) => ({
      ...row,
      id: Number(row.id),
      device_id: Number(row.device_id),
      user_id: row.user_id === null ? null : Number(row.user_id),
      group_id: row.group_id == null ? null : Number(row.group_id),
    }));
  }

  /**
   * The users allowed `permissionId` on a device at T through the chosen ways, in id order:
   * by role (`roleIds`: the roles that hold it), by a grant, or by an effective authority on the
   * device that is the owner or holds it; each only while the user is active, not deleted and of
   * a role with admin access (`adminRoleIds`).
   */
  async deviceAccessCandidates(
    query: DeviceAccessAsked & { readonly offset: number; readonly limit: number },
  ): Promise<CandidatePage> {
    const others = ownWays(query.via);
    const holding = holdingGroups(query.via);
    if (holding.length > 0)
      others.push(
        `SELECT r.user_id FROM (${holding.join(' UNION ')}) hg CROSS JOIN LATERAL group_users_at(hg.group_id, %T) r
         WHERE ${REACHED_BY_ASKED}`,
      );
    // By role: the users who ever had one of the roles (an index range), and those a group that ever
    // conferred one reaches at T; each kept only where its effective role at T has it. With no role
    // to look for ($3 empty) it reads nothing.
    return this.candidatePage(
      `WITH RECURSIVE ${THROUGH},
       by_role AS (
         SELECT DISTINCT h.user_id FROM user_access_history h
         WHERE $5::bigint IS NULL AND cardinality($3::int[]) > 0 AND h.role_id = ANY($3::int[]) AND h.valid_from <= %T
         UNION
         SELECT r.user_id FROM (${ROLE_GROUPS}) rg
         CROSS JOIN LATERAL group_users_at(rg.group_id, %T) r WHERE ${REACHED_BY_ASKED}),
       others AS (${others.join(' UNION ')}),
       candidates AS (SELECT user_id FROM by_role UNION SELECT user_id FROM others),
       admissible AS (
         SELECT c.user_id AS id FROM candidates c CROSS JOIN LATERAL ${USER_VERSION_AT.replace('%U', 'c.user_id')} u
         WHERE ${admissible('c.user_id IN (SELECT user_id FROM others)')})`,
      [
        query.deviceId,
        query.permissionId,
        query.via.has('role') ? [...query.roleIds] : [],
        [...query.adminRoleIds],
        query.groupId,
      ],
      query,
    );
  }

  /**
   * The authorities through which a user holds `permissionId` at T, in device order: effective
   * then (active, not revoked, not deleted, not expired), and the owner or holding the permission
   * then. Read from the rights history (ownership is right 0), one index range per right, so a
   * user with many authorities costs what the answer costs.
   *
   * Now (no moment asked), the same answer comes from `authority_rights`, the newest version of
   * each (authority, right), written by the commit step that stamps it, so seen exactly when the
   * version is: unless one of the user's rows there began after the moment (a change committed
   * within its millisecond, or after it began), those newest versions are the versions at the
   * moment, and only the usable ones are read (an index in device order) instead of every version.
   * Otherwise, and for any moment asked, the history answers.
   */
  userAccessCandidates(query: {
    readonly userId: number;
    readonly permissionId: number;
    /** Null: now. */
    readonly moment: Date | null;
    readonly offset: number;
    readonly limit: number;
    readonly direction: 'asc' | 'desc';
  }): Promise<CandidatePage> {
    const usable = (id: string): string => `SELECT r.authority_id, r.device_id FROM (
         SELECT DISTINCT ON (r.authority_id) r.authority_id, r.device_id, r.held, r.usable, r.expires_at
         FROM authority_right_history r WHERE r.user_id = $1 AND r.permission_id = ${id} AND r.valid_from <= %T
         ORDER BY r.authority_id, r.valid_from DESC, r.id DESC) r
       WHERE r.held AND r.usable AND (r.expires_at IS NULL OR r.expires_at > %T)`;
    const current = (alias: string, id: string): string => `${alias}.user_id = $1 AND ${alias}.permission_id = ${id}
       AND ${alias}.held AND ${alias}.usable AND (${alias}.expires_at IS NULL OR ${alias}.expires_at > %T)`;
    // An owner may also hold the permission: counted once, as owned (no hashing of the whole answer).
    // Through its groups at T: their effective authorities holding the permission then, on devices
    // where the user has no way of its own (one row per device: the answer's).
    const grouped = `SELECT DISTINCT ON (r.device_id) r.authority_id, r.device_id FROM (
         SELECT DISTINCT ON (r.authority_id) r.authority_id, r.device_id, r.held, r.usable, r.expires_at
         FROM user_groups_at($1, %T) ug JOIN authorities au ON au.group_id = ug.group_id
         JOIN authority_right_history r ON r.authority_id = au.id AND r.permission_id = $2 AND r.valid_from <= %T
         ORDER BY r.authority_id, r.valid_from DESC, r.id DESC) r
       WHERE r.held AND r.usable AND (r.expires_at IS NULL OR r.expires_at > %T)
       ORDER BY r.device_id, r.authority_id`;
    return this.candidatePage(
      `WITH owned AS (${usable('0')}), held AS (${usable('$2')}), grouped AS (${grouped}),
       admissible AS (
         SELECT authority_id AS id, device_id FROM owned
         UNION ALL
         SELECT authority_id, device_id FROM held WHERE authority_id NOT IN (SELECT authority_id FROM owned)
         UNION ALL
         SELECT authority_id, device_id FROM grouped
         WHERE device_id NOT IN (SELECT device_id FROM owned UNION SELECT device_id FROM held))`,
      [query.userId, query.permissionId],
      {
        ...query,
        order: 'device_id',
        current:
          query.moment !== null
            ? undefined
            : {
                // The newest versions answer for the user's own rights only: one in a group reads the history.
                later: `SELECT 1 FROM authority_rights c WHERE c.user_id = $1 AND c.valid_from > %T AND c.permission_id IN (0, $2)
                  UNION ALL SELECT 1 FROM user_groups_at($1, %T)`,
                parts: [
                  `SELECT c.authority_id AS id, c.device_id FROM authority_rights c WHERE ${current('c', '0')}`,
                  `SELECT c.authority_id AS id, c.device_id FROM authority_rights c WHERE ${current('c', '$2')}
                     AND c.authority_id NOT IN (SELECT o.authority_id FROM authority_rights o WHERE ${current('o', '0')})`,
                ],
              },
      },
    );
  }

  private async candidatePage(
    withClause: string,
    params: unknown[],
    page: {
      readonly moment: Date | null;
      readonly offset: number;
      readonly limit: number;
      readonly direction: 'asc' | 'desc';
      readonly order?: string;
      /**
       * The same candidates as `admissible` (`id` and the order column), read another way unless
       * `later` finds a row (a row that would make that way's answer differ): the union of
       * `parts`, each of which the order column's index reads in order, so that a page takes the
       * first rows of each and a total counts each once.
       */
      readonly current?: { readonly later: string; readonly parts: readonly string[] } | undefined;
    },
  ): Promise<CandidatePage> {
    const n = params.length;
    const direction = page.direction === 'desc' ? 'DESC' : 'ASC';
    const order = `${page.order ?? 'id'} ${direction}`;
    const limit = `$${n + 2}`;
    const offset = `$${n + 3}`;
    const ids = (source: string): string => `(SELECT array_agg(p.id ORDER BY p.${order}, p.id ${direction}) FROM (
                   SELECT * FROM ${source} ORDER BY ${order}, id ${direction} LIMIT ${limit} OFFSET ${offset}) p)`;
    let total = '(SELECT count(*) FROM admissible)';
    let pageIds = ids('admissible');
    if (page.current !== undefined) {
      // One way or the other, never both: a CASE evaluates only the subquery of its branch.
      const { later, parts } = page.current;
      const union = parts.join(' UNION ALL ');
      // The page is among the first offset + limit rows of one part or another.
      const firsts = parts
        .map(
          (part) =>
            `(SELECT * FROM (${part}) f ORDER BY ${order}, id ${direction} LIMIT ${limit}::bigint + ${offset}::bigint)`,
        )
        .join(' UNION ALL ');
      total = `CASE WHEN EXISTS (${later}) THEN ${total} ELSE (SELECT count(*) FROM (${union}) a) END`;
      pageIds = `CASE WHEN EXISTS (${later}) THEN ${pageIds} ELSE ${ids(`(${firsts}) a`)} END`;
    }
    const [row] = await this.db.query<{ total: number; ids: string[] | null; moment: Date }[]>(
      at(
        `${withClause}
         SELECT ${momentOf(`$${n + 1}`)} AS moment, ${total}::int AS total, ${pageIds} AS ids`,
        `$${n + 1}`,
      ),
      [...params, page.moment, page.limit, page.offset],
    );
    if (row === undefined) throw new Error('a candidate page query answered no row');
    return { ids: (row.ids ?? []).map(Number), total: Number(row.total), moment: row.moment };
  }

  /** The whole access history of a device's authorities and of their holders, with its events. */
  async deviceHistory(deviceId: number): Promise<DeviceHistory> {
    const MICROS = '(extract(epoch FROM valid_from) * 1000000)::bigint';
    const EXPIRES = '(extract(epoch FROM expires_at) * 1000000)::bigint::float8';
    const authorities = await this.db.query<DeviceHistory['authorities'][number][]>(
      `SELECT h.authority_id::int, h.user_id::int, au.group_id::int, h.owner, h.is_active, h.revoked, h.is_deleted,
              ${EXPIRES.replace('expires_at', 'h.expires_at')} AS expires_at,
              ${MICROS.replace('valid_from', 'h.valid_from')}::float8 AS "from", h.xid::text, h.actor_id::int
       FROM authority_history h JOIN authorities au ON au.id = h.authority_id
       WHERE h.device_id = $1 ORDER BY h.valid_from, h.id`,
      [deviceId],
    );
    const permissions = await this.db.query<DeviceHistory['permissions'][number][]>(
      `SELECT h.authority_permission_id::int, h.authority_id::int, p.code, h.is_active,
              (extract(epoch FROM h.expires_at) * 1000000)::bigint::float8 AS expires_at,
              ${MICROS.replace('valid_from', 'h.valid_from')}::float8 AS "from",
              h.xid::text, h.actor_id::int
       FROM authority_permission_history h JOIN permissions p ON p.id = h.permission_id
       WHERE h.device_id = $1 ORDER BY h.valid_from, h.id`,
      [deviceId],
    );
    // Whom the device's group authorities ever reached (through groups ever nested in theirs), and
    // every group any of its users (theirs or its own holders) was ever in, for the roles.
    const [reach] = await this.db.query<{ users: number[]; groups: number[] }[]>(
      `WITH RECURSIVE down(group_id) AS (
          SELECT au.group_id FROM authorities au WHERE au.device_id = $1 AND au.group_id IS NOT NULL
          UNION
          SELECT h.member_group_id FROM group_membership_history h JOIN down d ON h.group_id = d.group_id
          WHERE h.member_group_id IS NOT NULL),
        members AS (
          SELECT h.user_id FROM group_membership_history h
          WHERE h.group_id IN (SELECT group_id FROM down) AND h.user_id IS NOT NULL
          UNION
          SELECT h.user_id FROM authority_history h WHERE h.device_id = $1 AND h.user_id IS NOT NULL),
        up(group_id) AS (
          SELECT h.group_id FROM group_membership_history h WHERE h.user_id IN (SELECT user_id FROM members)
          UNION
          SELECT h.group_id FROM group_membership_history h JOIN up u ON h.member_group_id = u.group_id)
       SELECT ARRAY(SELECT user_id::int FROM members) AS users,
              ARRAY(SELECT group_id::int FROM up UNION SELECT group_id::int FROM down) AS groups`,
      [deviceId],
    );
    const [users, memberships, groups] = await Promise.all([
      this.db.query<DeviceHistory['users'][number][]>(
        `SELECT user_id::int, role_id, status_id, is_deleted, ${MICROS}::float8 AS "from", xid::text, actor_id::int
         FROM user_access_history WHERE user_id = ANY($1::bigint[]) ORDER BY valid_from, id`,
        [reach?.users ?? []],
      ),
      this.db.query<DeviceHistory['memberships'][number][]>(
        `SELECT membership_id::int, group_id::int, user_id::int, member_group_id::int, is_active,
                ${EXPIRES} AS expires_at, ${MICROS}::float8 AS "from", xid::text, actor_id::int
         FROM group_membership_history
         WHERE group_id = ANY($2::bigint[]) AND (user_id = ANY($1::bigint[]) OR member_group_id = ANY($2::bigint[]))
         ORDER BY valid_from, id`,
        [reach?.users ?? [], reach?.groups ?? []],
      ),
      this.db.query<DeviceHistory['groups'][number][]>(
        `SELECT group_id::int, role_id, is_deleted, ${MICROS}::float8 AS "from", xid::text, actor_id::int
         FROM group_history WHERE group_id = ANY($1::bigint[]) ORDER BY valid_from, id`,
        [reach?.groups ?? []],
      ),
    ]);
    const xids = [
      ...new Set([...authorities, ...permissions, ...users, ...memberships, ...groups].map((row) => row.xid)),
    ];
    const events = await this.db.query<{ key: string; id: string; actor_id: number | null }[]>(
      `SELECT e.xid::text || '/' || e.resource_type || '/' || e.resource_id AS key,
              lpad(e.seq::text, 20, '0') || '-' || lpad(e.id::text, 20, '0') AS id, e.actor_id::int
       FROM events e WHERE e.xid = ANY($1::xid8[]) AND e.seq IS NOT NULL ORDER BY e.seq, e.id`,
      [xids],
    );
    return {
      authorities,
      permissions,
      users,
      memberships,
      groups,
      events: firstEvents(events),
    };
  }

  /**
   * When a live answer changes by the clock alone: the next expiry of any grant, authority or
   * authority permission (judged before the page is read, so it can only be early).
   */
  async nextExpiry(): Promise<number | undefined> {
    const [row] = await this.db.query<{ at: Date | null }[]>(
      `SELECT least((SELECT min(expires_at) FROM permission_grants WHERE expires_at > now() AND revoked_at IS NULL),
                    (SELECT min(expires_at) FROM authorities WHERE expires_at > now()),
                    (SELECT min(expires_at) FROM authority_permissions WHERE expires_at > now() AND revoked_at IS NULL),
                    (SELECT min(expires_at) FROM group_memberships WHERE expires_at > now() AND removed_at IS NULL)) AS at`,
    );
    return row?.at == null ? undefined : row.at.getTime();
  }
}

/** Events in feed order → the first of each resource's key and of each transaction. */
function firstEvents(
  events: readonly { key: string; id: string; actor_id: number | null }[],
): Map<string, { readonly id: string; readonly actor_id: number | null }> {
  const first = new Map<string, { readonly id: string; readonly actor_id: number | null }>();
  for (const { key, id, actor_id } of events)
    for (const name of [key, key.split('/')[0] ?? '']) if (!first.has(name)) first.set(name, { id, actor_id });
  return first;
}
