import { admissible, devicePaths } from '../access-model/access-rules.js';
import { MAX_GROUP_DEPTH } from '../access-model/group-rules.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import { isDeviceScoped, PERMISSION_CODES } from '../platform/auth/permissions.js';
import type { DeviceHistory } from './access-history.repository.js';
import { subjectAt } from './access.service.js';
import type { AccessTimelineEntryDto } from './dto/access-timeline.dto.js';

const DEVICE_PERMISSIONS = PERMISSION_CODES.filter(isDeviceScoped);

type AuthorityVersion = DeviceHistory['authorities'][number];
type PermissionVersion = DeviceHistory['permissions'][number];
type UserVersion = DeviceHistory['users'][number];
type MembershipVersion = DeviceHistory['memberships'][number];
type GroupVersion = DeviceHistory['groups'][number];

/** What happened at one instant, and why a right came or went. */
interface Cause {
  readonly cause: string;
  readonly xid: string | null;
  readonly resource: string | null;
  readonly actor_id: number | null;
  /** The group a change through a group went through. */
  readonly group_id?: number;
}

/** The way a user holds a right on the device: the authority, and the group holding it (if any). */
interface Way {
  readonly authority_id: number;
  readonly group_id: number | null;
}

type Change =
  | { readonly kind: 'authority'; readonly row: AuthorityVersion }
  | { readonly kind: 'permission'; readonly row: PermissionVersion }
  | { readonly kind: 'user'; readonly row: UserVersion }
  | { readonly kind: 'membership'; readonly row: MembershipVersion }
  | { readonly kind: 'group'; readonly row: GroupVersion }
  /** An authority's or one of its permissions' expiry: the clock alone changes its rights. */
  | { readonly kind: 'expiry'; readonly authority_id: number }
  /** A membership's expiry. */
  | { readonly kind: 'membership_expiry'; readonly membership_id: number };

function authorityCause(before: AuthorityVersion | undefined, after: AuthorityVersion): string {
  // A new authority that is the owner's comes from a transfer (the only way ownership is given).
  if (before === undefined) return after.owner ? 'ownership_transferred' : 'authority_created';
  if (before.owner !== after.owner) return 'ownership_transferred';
  if (before.revoked !== after.revoked) return after.revoked ? 'revoked' : 'unrevoked';
  if (before.is_deleted !== after.is_deleted) return after.is_deleted ? 'authority_deleted' : 'authority_restored';
  if (before.is_active !== after.is_active) return after.is_active ? 'activated' : 'deactivated';
  return 'expiry_changed';
}

function userCause(before: UserVersion | undefined, after: UserVersion): string {
  if (before === undefined) return 'user_created';
  if (before.is_deleted !== after.is_deleted) return after.is_deleted ? 'user_deleted' : 'user_restored';
  if (before.role_id !== after.role_id) return 'role_changed';
  return 'user_status_changed';
}

function membershipCause(before: MembershipVersion | undefined, after: MembershipVersion): string {
  if (before?.is_active !== after.is_active) return after.is_active ? 'group_member_added' : 'group_member_removed';
  return 'expiry_changed';
}

function groupCause(before: GroupVersion | undefined, after: GroupVersion): string {
  if (before === undefined) return 'group_created';
  if (before.is_deleted !== after.is_deleted) return after.is_deleted ? 'group_deleted' : 'group_restored';
  return 'group_role_changed';
}

/** A µs instant as the API shows it (to the millisecond, as the rules read expiries), or null. */
const isoOf = (micros: number | null): string | null =>
  micros === null ? null : new Date(Math.floor(micros / 1000)).toISOString();

/** Adds `value` to the set at `key`. */
function index<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set === undefined) map.set(key, new Set([value]));
  else set.add(value);
}

/**
 * The device's history as it stood at each instant: its authorities (its users' own and its
 * groups'), their permissions, the users, and the groups and memberships through which users
 * reach the groups' authorities (and their roles).
 */
class DeviceState {
  readonly authorities = new Map<number, AuthorityVersion>();
  readonly held = new Map<number, Map<number, PermissionVersion>>();
  readonly users = new Map<number, UserVersion>();
  readonly memberships = new Map<number, MembershipVersion>();
  readonly groups = new Map<number, GroupVersion>();
  readonly ownAuthorities = new Map<number, Set<number>>();
  readonly groupAuthorities = new Map<number, Set<number>>();
  /** Memberships by their group, by their user, and by their member group. */
  readonly membersOf = new Map<number, Set<number>>();
  readonly ofUser = new Map<number, Set<number>>();
  readonly ofGroup = new Map<number, Set<number>>();

  apply(change: Change): void {
    if (change.kind === 'authority') {
      const { row } = change;
      this.authorities.set(row.authority_id, row);
      if (row.group_id !== null) index(this.groupAuthorities, row.group_id, row.authority_id);
      else if (row.user_id !== null) index(this.ownAuthorities, row.user_id, row.authority_id);
    } else if (change.kind === 'permission') {
      const { row } = change;
      const rows = this.held.get(row.authority_id) ?? new Map<number, PermissionVersion>();
      this.held.set(row.authority_id, rows.set(row.authority_permission_id, row));
    } else if (change.kind === 'user') this.users.set(change.row.user_id, change.row);
    else if (change.kind === 'group') this.groups.set(change.row.group_id, change.row);
    else if (change.kind === 'membership') {
      const { row } = change;
      this.memberships.set(row.membership_id, row);
      index(this.membersOf, row.group_id, row.membership_id);
      if (row.user_id !== null) index(this.ofUser, row.user_id, row.membership_id);
      if (row.member_group_id !== null) index(this.ofGroup, row.member_group_id, row.membership_id);
    }
  }

  private liveGroup(groupId: number): boolean {
    const group = this.groups.get(groupId);
    return group !== undefined && !group.is_deleted;
  }

  /** A membership live at `t` (µs): active, unexpired, into a live group. */
  private live(membershipId: number, t: number): MembershipVersion | undefined {
    const row = this.memberships.get(membershipId);
    if (row === undefined || !row.is_active || (row.expires_at !== null && row.expires_at <= t)) return undefined;
    return this.liveGroup(row.group_id) ? row : undefined;
  }

  /** The groups a user reaches at `t`, each by one chain of at most MAX_GROUP_DEPTH groups. */
  groupsOf(userId: number, t: number): Map<number, number[]> {
    const reached = new Map<number, number[]>();
    let frontier: [number, number[]][] = [];
    for (const id of this.ofUser.get(userId) ?? []) {
      const row = this.live(id, t);
      if (row !== undefined && !reached.has(row.group_id)) {
        reached.set(row.group_id, [row.group_id]);
        frontier.push([row.group_id, [row.group_id]]);
      }
    }
    while (frontier.length > 0) {
      const next: [number, number[]][] = [];
      for (const [groupId, via] of frontier) {
        if (via.length >= MAX_GROUP_DEPTH) continue;
        for (const id of this.ofGroup.get(groupId) ?? []) {
          const row = this.live(id, t);
          if (row === undefined || reached.has(row.group_id)) continue;
          reached.set(row.group_id, [...via, row.group_id]);
          next.push([row.group_id, [...via, row.group_id]]);
        }
      }
      frontier = next;
    }
    return reached;
  }

  /** The users a group reaches at `t` (members, and members of live groups nested in it). */
  usersBelow(groupId: number, t: number): Set<number> {
    const users = new Set<number>();
    const seen = new Set<number>([groupId]);
    let frontier = [groupId];
    for (let depth = 1; depth <= MAX_GROUP_DEPTH && frontier.length > 0; depth += 1) {
      const next: number[] = [];
      for (const id of frontier)
        for (const membershipId of this.membersOf.get(id) ?? []) {
          const row = this.memberships.get(membershipId);
          if (row === undefined || !row.is_active || (row.expires_at !== null && row.expires_at <= t)) continue;
          if (row.user_id !== null) users.add(row.user_id);
          else if (row.member_group_id !== null && !seen.has(row.member_group_id)) {
            seen.add(row.member_group_id);
            next.push(row.member_group_id);
          }
        }
      frontier = next;
    }
    return users;
  }

  /** Every device-scoped right the user holds on the device at `t`, each with its first way. */
  rightsOf(userId: number, t: number): Map<string, Way> {
    const user = this.users.get(userId);
    const reached = this.groupsOf(userId, t);
    const groups = [...reached].map(([group_id, via]) => ({
      group_id,
      role_id: this.groups.get(group_id)?.role_id ?? null,
      via,
      expires_at: null,
    }));
    const subject = subjectAt(user && { ...user, grants: [], groups }, t / 1000);
    const rights = new Map<string, Way>();
    if (subject === undefined || !admissible(subject)) return rights;
    const facts: AuthorityFacts[] = [];
    for (const id of this.ownAuthorities.get(userId) ?? []) facts.push(this.facts(id, userId, null, []));
    for (const [groupId, via] of reached)
      for (const id of this.groupAuthorities.get(groupId) ?? []) facts.push(this.facts(id, userId, groupId, via));
    for (const code of DEVICE_PERMISSIONS) {
      const [way] = devicePaths(facts, code, t / 1000);
      if (way !== undefined) rights.set(code, { authority_id: way.authority_id ?? 0, group_id: way.group_id });
    }
    return rights;
  }

  private facts(authorityId: number, userId: number, groupId: number | null, via: number[]): AuthorityFacts {
    const version = this.authorities.get(authorityId);
    return {
      id: authorityId,
      device_id: 0,
      user_id: userId,
      group_id: groupId,
      via,
      owner: version?.owner ?? false,
      is_active: version?.is_active ?? false,
      revoked: version?.revoked ?? true,
      deleted: version?.is_deleted ?? true,
      expires_at: isoOf(version?.expires_at ?? null),
      authority_permissions: [...(this.held.get(authorityId)?.values() ?? [])]
        .filter((row) => row.is_active)
        .map((row) => ({ code: row.code, expires_at: isoOf(row.expires_at) })),
    };
  }

  /** The users whose rights a change may move (read before and after it is applied). */
  touchedBy(change: Change, t: number): Set<number> {
    const users = new Set<number>();
    const ofAuthority = (authorityId: number): void => {
      const version = this.authorities.get(authorityId);
      if (version?.user_id != null) users.add(version.user_id);
      if (version?.group_id != null) for (const user of this.usersBelow(version.group_id, t)) users.add(user);
    };
    if (change.kind === 'authority') {
      if (change.row.user_id !== null) users.add(change.row.user_id);
      ofAuthority(change.row.authority_id);
    } else if (change.kind === 'permission') ofAuthority(change.row.authority_id);
    else if (change.kind === 'expiry') ofAuthority(change.authority_id);
    else if (change.kind === 'user') users.add(change.row.user_id);
    else if (change.kind === 'group') for (const user of this.usersBelow(change.row.group_id, t)) users.add(user);
    else {
      const row = change.kind === 'membership' ? change.row : this.memberships.get(change.membership_id);
      if (row?.user_id != null) users.add(row.user_id);
      if (row?.member_group_id != null) for (const user of this.usersBelow(row.member_group_id, t)) users.add(user);
    }
    return users;
  }
}

/**
 * The timeline, oldest first. The device's versions (and those of the groups and memberships its
 * groups' authorities reach through) are applied instant by instant (µs); after each instant the
 * rights of the users it touched are judged again by the rules and compared with what they were,
 * so the work is the number of changes times the users each reaches. A right's cause is the change
 * that touched that very right (an authority permission), else its authority, else its holder,
 * else the group or membership it came through, else the clock (an expiry).
 */
export function replay(history: DeviceHistory, nowMicros: number, startMicros: number): AccessTimelineEntryDto[] {
  const changes = new Map<number, Change[]>();
  const add = (instant: number, change: Change): void => {
    const list = changes.get(instant);
    if (list === undefined) changes.set(instant, [change]);
    else list.push(change);
  };
  const expiring = (row: { expires_at: number | null; from: number }): row is { expires_at: number; from: number } =>
    row.expires_at !== null && row.expires_at > row.from && row.expires_at <= nowMicros;
  for (const row of history.authorities) {
    add(row.from, { kind: 'authority', row });
    if (expiring(row)) add(row.expires_at, { kind: 'expiry', authority_id: row.authority_id });
  }
  for (const row of history.permissions) {
    add(row.from, { kind: 'permission', row });
    if (row.is_active && expiring(row)) add(row.expires_at, { kind: 'expiry', authority_id: row.authority_id });
  }
  for (const row of history.users) add(row.from, { kind: 'user', row });
  for (const row of history.groups) add(row.from, { kind: 'group', row });
  for (const row of history.memberships) {
    add(row.from, { kind: 'membership', row });
    if (row.is_active && expiring(row))
      add(row.expires_at, { kind: 'membership_expiry', membership_id: row.membership_id });
  }

  const state = new DeviceState();
  const rights = new Map<number, Map<string, Way>>();
  const entries: AccessTimelineEntryDto[] = [];

  for (const instant of [...changes.keys()].sort((a, b) => a - b)) {
    const list = changes.get(instant) ?? [];
    const started = instant === startMicros;
    const causeOf = (
      cause: string,
      row: { xid: Cause['xid']; actor_id: Cause['actor_id'] },
      resource: string,
      groupId?: number,
    ): Cause => ({
      cause: started ? 'history_started' : cause,
      xid: row.xid,
      resource,
      actor_id: row.actor_id,
      ...(groupId === undefined ? {} : { group_id: groupId }),
    });
    const byAuthority = new Map<number, Cause>();
    const byPermission = new Map<string, Cause>();
    const byUser = new Map<number, Cause>();
    const byGroup = new Map<number, Cause>();
    // Who the instant may move: those the changes reach before they apply, and after.
    const touched = new Set<number>();
    for (const change of list) for (const user of state.touchedBy(change, instant - 1)) touched.add(user);
    for (const change of list) {
      if (change.kind === 'authority') {
        const { row } = change;
        const cause = authorityCause(state.authorities.get(row.authority_id), row);
        byAuthority.set(row.authority_id, causeOf(cause, row, `authority/${row.authority_id}`));
      } else if (change.kind === 'permission') {
        const { row } = change;
        byPermission.set(
          `${row.authority_id} ${row.code}`,
          causeOf(
            row.is_active ? 'permission_granted' : 'permission_revoked',
            row,
            `authority_permission/${row.authority_permission_id}`,
          ),
        );
      } else if (change.kind === 'user') {
        const { row } = change;
        byUser.set(row.user_id, causeOf(userCause(state.users.get(row.user_id), row), row, `user/${row.user_id}`));
      } else if (change.kind === 'group') {
        const { row } = change;
        const cause = causeOf(
          groupCause(state.groups.get(row.group_id), row),
          row,
          `group/${row.group_id}`,
          row.group_id,
        );
        // Those the group reaches, before and after (a deleted group reaches no one after).
        for (const user of state.usersBelow(row.group_id, instant - 1)) byGroup.set(user, cause);
      } else if (change.kind === 'membership') {
        const { row } = change;
        const cause = causeOf(
          membershipCause(state.memberships.get(row.membership_id), row),
          row,
          `group/${row.group_id}`,
          row.group_id,
        );
        const reached = row.user_id !== null ? [row.user_id] : [...state.usersBelow(row.member_group_id ?? 0, instant)];
        for (const user of reached) byGroup.set(user, cause);
      }
      state.apply(change);
    }
    for (const change of list) for (const user of state.touchedBy(change, instant)) touched.add(user);
    for (const userId of [...touched].sort((a, b) => a - b)) {
      const before = rights.get(userId) ?? new Map<string, Way>();
      const after = state.rightsOf(userId, instant);
      rights.set(userId, after);
      const moved = [
        ...[...after].filter(([code]) => !before.has(code)).map(([code, way]) => ['gained', code, way] as const),
        ...[...before].filter(([code]) => !after.has(code)).map(([code, way]) => ['lost', code, way] as const),
      ];
      for (const [change, code, way] of moved) {
        const cause = byPermission.get(`${way.authority_id} ${code}`) ??
          byAuthority.get(way.authority_id) ??
          byUser.get(userId) ??
          byGroup.get(userId) ?? { cause: 'expired', xid: null, resource: null, actor_id: null };
        const event =
          cause.xid === null
            ? undefined
            : (history.events.get(`${cause.xid}/${cause.resource}`) ?? history.events.get(cause.xid));
        entries.push({
          occurred_at: new Date(Math.floor(instant / 1000)).toISOString(),
          user_id: userId,
          change,
          cause: cause.cause,
          permission_code: code,
          group_id: way.group_id ?? cause.group_id ?? null,
          actor_id: event?.actor_id ?? cause.actor_id,
          event_id: event?.id ?? null,
        });
      }
    }
  }
  return entries;
}
