import type { EntityManager } from 'typeorm';
import { Inject, Injectable } from '@nestjs/common';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { sizedQuery } from '../platform/database/prepared.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import type { GrantFacts, GroupFacts } from '../platform/auth/auth-context.js';
import { groupGrantsJson, normalisedGroup, userGroupChains, userGroupsJson } from './group-facts.repository.js';
import { permissionCodeOf } from '../platform/auth/permissions.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';

/** The user fields that decide authentication and authorization, with the live grants. */
export interface AuthUserRow {
  readonly role_id: number;
  readonly status_id: number;
  readonly is_deleted: boolean;
  /** users.version + the user's grants version: both only grow, so their sum labels the projection. */
  readonly version: number;
  /** The user's own live grants, then those of its groups (with `group_id` and `via`). */
  readonly grants: GrantFacts[];
  /** The groups the user belongs to now (nested included), one lasting chain each. */
  readonly groups: GroupFacts[];
  /** The user's live authorities, or null when it holds more than `AUTH_CONTEXT_AUTHORITIES`. */
  readonly authorities: AuthorityFacts[] | null;
}

/** The parts of a user's entries' versions (`userVersions`). */
export interface UserVersions {
  /** `users.version`. */
  readonly own: number;
  /** The `user` projection version (its rights). */
  readonly user: number;
  /** The `user_groups` projection version (its groups). */
  readonly groups: number;
}

/** The version `authUsers` labels a user's context entry with (the sum `AuthUserRow.version` is). */
export const authVersionOf = (versions: UserVersions): number => versions.own + versions.user + versions.groups;

/** A device's live authorities with the version of the set. */
export interface DeviceAuthoritySet {
  readonly device_id: number;
  readonly version: number;
  readonly authorities: AuthorityFacts[];
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/** A grant held by one of the user's groups, as the statement reads it. */
export interface GroupGrantRow {
  readonly id: number;
  readonly permission_id: number;
  readonly expires_at: string | null;
  readonly group_id: number;
  readonly via: number[];
}

/** A group's grant as the rules take it: its code from the catalogue (ids are fixed). */
export function groupGrant(row: GroupGrantRow): GrantFacts {
  return {
    id: Number(row.id),
    code: permissionCodeOf(Number(row.permission_id)) ?? `unknown:${row.permission_id}`,
    expires_at: row.expires_at,
    group_id: Number(row.group_id),
    via: row.via.map(Number),
  };
}

/**
 * Trusted text producing `AuthorityFacts` for `authorities a`, as held by `user` (an expression;
 * `a.user_id` for the row's own) with expiry `expiresAt`. Permissions already expired are left
 * out; the others carry their expiry, which the rules judge at decision time (a cached set is read
 * long after it was built, and no write marks the instant a permission expires).
 */
function authorityFacts(user = 'a.user_id', expiresAt = 'a.expires_at', via = 'NULL::bigint[]'): string {
  return `a.id, a.device_id, ${user} AS user_id, a.group_id, a.owner, a.is_active, a.revoked_at IS NOT NULL AS revoked, a.is_deleted AS deleted,
  to_char(${expiresAt} AT TIME ZONE 'UTC', ${ISO}) AS expires_at, ${via} AS via,
  ARRAY(SELECT json_build_object('code', p.code, 'expires_at', to_char(ap.expires_at AT TIME ZONE 'UTC', ${ISO}))
        FROM authority_permissions ap JOIN permissions p ON p.id = ap.permission_id
        WHERE ap.authority_id = a.id AND ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now())
        ORDER BY p.code) AS authority_permissions`;
}

export const AUTHORITY_FACTS = authorityFacts();

const LIVE_AUTHORITY = 'NOT a.is_deleted AND a.revoked_at IS NULL AND a.is_active';

/**
 * Trusted text: the live authorities the user `user` holds (its own, then its groups' as it holds
 * them: `via`, and the earlier of the authority's and the membership chain's expiry), each
 * restricted by `filter` (a condition on `a`).
 */
function heldAuthorities(user: string, filter = ''): string {
  return `SELECT ${authorityFacts()} FROM authorities a WHERE a.user_id = ${user} AND ${LIVE_AUTHORITY} ${filter}
    UNION ALL
    SELECT ${authorityFacts(user, 'least(a.expires_at, c.expires_at)', 'c.via')}
    FROM (${userGroupChains(user)}) c JOIN authorities a ON a.group_id = c.group_id AND ${LIVE_AUTHORITY} ${filter}`;
}

/**
 * The reads behind authorization's projections (a user's role, status and grants; each device's
 * authority set; a user's own authorities). Each is one statement, so the version it reads can
 * never be newer than the facts it labels.
 */
@Injectable()
export class AccessFactsRepository {
  /** At most this many authorities carried per context (the setting, validated as an integer). */
  private readonly carried: number;

  constructor(
    private readonly uow: UnitOfWork,
    @Inject(SETTINGS) settings: Pick<Settings, 'authContextAuthorities'>,
  ) {
    this.carried = settings.authContextAuthorities;
  }

  async authUser(userId: number): Promise<AuthUserRow | undefined> {
    const [row] = await this.authUsers([userId]);
    return row;
  }

  /** `authUser` for many users in one statement (a triggered rebuild), each row with its `id`. */
  async authUsers(userIds: readonly number[]): Promise<(AuthUserRow & { readonly id: number })[]> {
    const rows = await sizedQuery<AuthUserRow & { id: number; group_grants: GroupGrantRow[] }>(
      this.uow.reader,
      'auth-users',
      (ids) => `SELECT u.id, u.role_id, u.status_id, u.is_deleted,
              u.version + coalesce((SELECT v.version FROM projection_versions v WHERE v.scope = 'user' AND v.id = u.id), 1)
                + coalesce((SELECT v.version FROM projection_versions v WHERE v.scope = 'user_groups' AND v.id = u.id), 1) AS version,
              ARRAY(SELECT json_build_object('id', g.id, 'code', p.code, 'expires_at', to_char(g.expires_at AT TIME ZONE 'UTC', ${ISO}))
                    FROM permission_grants g JOIN permissions p ON p.id = g.permission_id
                    WHERE g.user_id = u.id AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now())
                    ORDER BY g.id) AS grants,
              ${groupGrantsJson('u.id')} AS group_grants,
              ${userGroupsJson('u.id')} AS groups,
              (SELECT CASE WHEN count(*) > $2 THEN NULL ELSE coalesce(json_agg(f ORDER BY f.device_id, f.id), '[]'::json) END
                 FROM (${heldAuthorities('u.id')} LIMIT $2 + 1) f) AS authorities
       FROM users u WHERE u.id = ANY(${ids})`,
      userIds,
      [this.carried],
    );
    return rows.map(({ group_grants, ...row }) => ({
      ...row,
      authorities: row.authorities === null ? null : row.authorities.map(normalisedAuthority),
      groups: row.groups.map(normalisedGroup),
      grants: [...row.grants, ...group_grants.map(groupGrant)],
    }));
  }

  /**
   * What the versions of these users' entries are made of, through `db` (inside a write): their
   * row's version and their `user` and `user_groups` projection versions. One read for both the
   * auth contexts and the details a change of their groups marks stale (two correlated reads
   * per user took 0.8 s for 100 000 of them, these joins 0.3 s).
   */
  async userVersions(db: EntityManager, userIds: readonly number[]): Promise<Map<number, UserVersions>> {
    const rows = await db.query<{ id: string; own: string; user: string; groups: string }[]>(
      `SELECT u.id, u.version AS own, coalesce(pu.version, 1) AS "user", coalesce(pg.version, 1) AS groups
       FROM users u LEFT JOIN projection_versions pu ON pu.scope = 'user' AND pu.id = u.id
       LEFT JOIN projection_versions pg ON pg.scope = 'user_groups' AND pg.id = u.id
       WHERE u.id = ANY($1::bigint[])`,
      [[...userIds]],
    );
    return new Map(
      rows.map((row) => [Number(row.id), { own: Number(row.own), user: Number(row.user), groups: Number(row.groups) }]),
    );
  }

  /** The devices' authority sets, one row per id (an empty set for a device without any). */
  async deviceAuthoritySets(deviceIds: readonly number[]): Promise<DeviceAuthoritySet[]> {
    const rows = await this.uow.reader.query<DeviceAuthoritySet[]>(
      `SELECT d.id AS device_id, coalesce(v.version, 1) AS version,
              (SELECT coalesce(json_agg(f), '[]'::json) FROM (
                 SELECT ${AUTHORITY_FACTS} FROM authorities a WHERE a.device_id = d.id AND ${LIVE_AUTHORITY}) f) AS authorities
       FROM unnest($1::bigint[]) AS d(id) LEFT JOIN projection_versions v ON v.scope = 'device' AND v.id = d.id`,
      [deviceIds],
    );
    return rows.map((row) => ({ ...row, device_id: Number(row.device_id), version: Number(row.version) }));
  }

  /** A user's live authorities (its own and its groups', as it holds them), optionally only on the devices `among`. */
  async liveAuthoritiesOf(userId: number, among?: readonly number[]): Promise<AuthorityFacts[]> {
    const filter = among === undefined ? '' : 'AND a.device_id = ANY($2::bigint[])';
    const rows = await this.uow.reader.query<AuthorityFacts[]>(
      heldAuthorities('$1::bigint', filter),
      among === undefined ? [userId] : [userId, [...new Set(among)]],
    );
    return rows.map(normalisedAuthority);
  }

  /** A page of device ids in order, after `afterId` (a triggered rebuild warms every device's set). */
  async deviceIdsAfter(afterId: number, limit: number): Promise<number[]> {
    const rows = await this.uow.reader.query<{ id: number }[]>(
      'SELECT id FROM devices WHERE id > $1 ORDER BY id LIMIT $2',
      [afterId, limit],
    );
    return rows.map((row) => Number(row.id));
  }
}

/** Authority facts as a statement gives them: bigint ids as numbers, `via` only on a group's. */
export function normalisedAuthority(row: AuthorityFacts): AuthorityFacts {
  const { via, group_id, ...rest } = row;
  return {
    ...rest,
    id: Number(row.id),
    device_id: Number(row.device_id),
    user_id: row.user_id === null ? null : Number(row.user_id),
    ...(group_id == null ? {} : { group_id: Number(group_id), via: (via ?? [group_id]).map(Number) }),
  };
}
