import type { GrantFacts, Subject } from '../platform/auth/auth-context.js';
import type { AuthorityFacts, HeldPermission } from '../platform/auth/authority-facts.js';
import { DENIED, type DecidedBy, type Decision } from '../platform/auth/decision.js';
import { isDeviceScoped } from '../platform/auth/permissions.js';

/** One way a permission is allowed (`/authz/check?explain=true`, the access lists' `allowed_by`). */
export interface AccessPath {
  readonly decided_by: DecidedBy;
  readonly authority_id: number | null;
  readonly grant_id: number | null;
  /** The group holding the right (or conferring the role); null when the user holds it itself. */
  readonly group_id: number | null;
  /** The chain of groups from the user's own group to `group_id` (`[]` when the user holds it itself). */
  readonly via: readonly number[];
  /**
   * When this way ends by itself, ISO, or null: the grant's or the authority's expiry, and for an
   * authority permission the earlier of the authority's and the permission's.
   */
  readonly expires_at: string | null;
}

const expired = (expiresAt: string | null, at: number): boolean => expiresAt !== null && Date.parse(expiresAt) <= at;

/** The earlier of two expiries (null: never). */
export function earlierExpiry(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return Date.parse(b) < Date.parse(a) ? b : a;
}

/** The authority's permission `code` that still allows at `at` (not expired then), if any. */
export function heldPermission(authority: AuthorityFacts, code: string, at: number): HeldPermission | undefined {
  return authority.authority_permissions.find((held) => held.code === code && !expired(held.expires_at, at));
}

/**
 * The rules of part 5, layers 2 to 3c, as pure functions of the facts and a moment `at` (epoch
 * ms): every question (the guard, list row filtering, bulk item checks, `/authz/check`, the
 * access lists and their point-in-time forms) is answered here, from facts read either now or as
 * they were at `at`, so none can disagree with another. Expiry is judged at `at`.
 */

/** Whether the subject may be allowed anything at all: admin access, active, not deleted. */
export function admissible(subject: Subject): boolean {
  return subject.role.admin_access && subject.active;
}

/** Why the subject has no way at all to a permission (`/authz/check?explain=true` on a denial). */
export const DENIAL_REASONS = ['user_not_active', 'role_without_admin_access', 'no_path'] as const;
export type DenialReason = (typeof DENIAL_REASONS)[number];

/**
 * The first rule of part 5 that refuses: the user's status (layer 1: a pending, suspended or
 * deleted user, or one that did not exist yet at the moment asked, never gets past its session),
 * then the role's admin access (layer 2), else no layer-3 path. Only meaningful on a denial.
 */
export function denialReason(subject: Subject | undefined): DenialReason {
  if (subject === undefined || !subject.active) return 'user_not_active';
  if (!subject.role.admin_access) return 'role_without_admin_access';
  return 'no_path';
}

/** The role's way: through the group conferring the effective role, when one does. */
function roleWay(subject: Subject): AccessPath {
  const group = subject.role_group_id ?? null;
  if (group === null) return ROLE_PATH;
  const via = subject.groups?.find((held) => held.group_id === group)?.via ?? [group];
  return { decided_by: 'role', authority_id: null, grant_id: null, group_id: group, via, expires_at: null };
}

/** A grant's way: the user's own (`permission_grant`) or a group's (`group_permission_grant`). */
function grantWay(grant: GrantFacts): AccessPath {
  const group = grant.group_id ?? null;
  return {
    decided_by: group === null ? 'permission_grant' : 'group_permission_grant',
    authority_id: null,
    grant_id: grant.id,
    group_id: group,
    via: group === null ? [] : (grant.via ?? [group]),
    expires_at: grant.expires_at,
  };
}

/** The subject's live grants of `permission` at `at`: its own first, then its groups' (the order of part 5). */
function* liveGrants(subject: Subject, permission: string, at: number): Generator<GrantFacts> {
  for (const own of [true, false])
    for (const grant of subject.grants) {
      const owned = (grant.group_id ?? null) === null;
      if (owned === own && grant.code === permission && !expired(grant.expires_at, at)) yield grant;
    }
}

/** Layers 3a and 3b: the ways the subject holds the permission everywhere, in the order they decide. */
function* globalWays(subject: Subject, permission: string, at: number): Generator<AccessPath> {
  if (!admissible(subject)) return;
  if ((subject.role.permissions as ReadonlySet<string>).has(permission)) yield roleWay(subject);
  for (const grant of liveGrants(subject, permission, at)) yield grantWay(grant);
}

/** Every way the subject holds the permission everywhere (layers 3a and 3b). */
export function globalPaths(subject: Subject, permission: string, at: number): AccessPath[] {
  return [...globalWays(subject, permission, at)];
}

/**
 * The decision of layers 3a and 3b, from the first way alone: the guard asks this on every
 * request, so the common answers (the role's, no grant at all) are written out without a generator.
 */
export function globalDecision(subject: Subject, permission: string, at: number): Decision {
  if (!admissible(subject)) return DENIED;
  if ((subject.role.permissions as ReadonlySet<string>).has(permission))
    return (subject.role_group_id ?? null) === null ? ROLE_DECISION : decisionOf([roleWay(subject)]);
  if (subject.grants.length === 0) return DENIED;
  return decisionOf(globalPaths(subject, permission, at));
}

const ROLE_PATH: AccessPath = Object.freeze({
  decided_by: 'role',
  authority_id: null,
  grant_id: null,
  group_id: null,
  via: [],
  expires_at: null,
});

const ROLE_DECISION: Decision = Object.freeze({
  allowed: true,
  decided_by: 'role',
  authority_id: null,
  grant_id: null,
  group_id: null,
});

/** The ways of layer 3c in the order they decide: the owner, the user's own, then a group's. */
const DEVICE_ORDER: Readonly<Record<string, number>> = {
  device_owner: 0,
  authority_permission: 1,
  group_authority_permission: 2,
};

/**
 * Layer 3c for one authority: effective (active, not revoked, not deleted, not expired) and the
 * owner, or holding the permission unexpired (both ways listed when both hold). A group's authority
 * (as a member holds it) is never the owner; its way is `group_authority_permission`. Only for
 * device-scoped permissions; the subject's admissibility is judged by `accessPaths`.
 */
export function authorityPaths(authority: AuthorityFacts, permission: string, at: number): AccessPath[] {
  if (!isDeviceScoped(permission)) return [];
  if (!authority.is_active || authority.revoked || authority.deleted || expired(authority.expires_at, at)) return [];
  const paths: AccessPath[] = [];
  const group = authority.group_id ?? null;
  const way = {
    authority_id: authority.id,
    grant_id: null,
    group_id: group,
    via: group === null ? [] : (authority.via ?? [group]),
    expires_at: authority.expires_at,
  };
  if (authority.owner && group === null) paths.push({ decided_by: 'device_owner', ...way });
  const held = heldPermission(authority, permission, at);
  if (held !== undefined)
    paths.push({
      decided_by: group === null ? 'authority_permission' : 'group_authority_permission',
      ...way,
      expires_at: earlierExpiry(authority.expires_at, held.expires_at),
    });
  return paths;
}

/** Layer 3c over every authority the subject holds on one device, in deciding order. */
export function devicePaths(authorities: readonly AuthorityFacts[], permission: string, at: number): AccessPath[] {
  const paths = authorities.flatMap((authority) => authorityPaths(authority, permission, at));
  return paths.length < 2
    ? paths
    : paths.sort((a, b) => (DEVICE_ORDER[a.decided_by] ?? 9) - (DEVICE_ORDER[b.decided_by] ?? 9));
}

/**
 * The authorities of a device's set (or any list of authorities) as the subject holds them: its
 * own, and each group's it belongs to at `at`, seen as that member's (`user_id` the subject, `via`
 * the chain, `expires_at` the earlier of the authority's and the membership chain's).
 */
export function heldBy(subject: Subject, authorities: readonly AuthorityFacts[], at: number): AuthorityFacts[] {
  const held: AuthorityFacts[] = [];
  for (const authority of authorities) {
    if (authority.user_id === subject.user_id) {
      held.push(authority);
      continue;
    }
    const groupId = authority.group_id ?? null;
    if (groupId === null) continue;
    const group = subject.groups?.find((candidate) => candidate.group_id === groupId);
    if (group === undefined || expired(group.expires_at, at)) continue;
    held.push({
      ...authority,
      user_id: subject.user_id,
      via: group.via,
      expires_at: earlierExpiry(authority.expires_at, group.expires_at),
    });
  }
  return held;
}

/** Every way the subject is allowed the permission (on the device whose authorities, as it holds them, are given). */
export function accessPaths(
  subject: Subject,
  authorities: readonly AuthorityFacts[] | undefined,
  permission: string,
  at: number,
): AccessPath[] {
  if (!admissible(subject)) return [];
  const global = globalPaths(subject, permission, at);
  return authorities === undefined || authorities.length === 0
    ? global
    : [...global, ...devicePaths(authorities, permission, at)];
}

/** The decision is the first way, in the order of part 5 (role, grant, owner, authority permission). */
export function decisionOf(paths: readonly AccessPath[]): Decision {
  const [first] = paths;
  return first === undefined
    ? DENIED
    : {
        allowed: true,
        decided_by: first.decided_by,
        authority_id: first.authority_id,
        grant_id: first.grant_id,
        group_id: first.group_id,
      };
}
