import { Injectable } from '@nestjs/common';
import { admissible, authorityPaths } from '../auth/access-rules.js';
import type { AuthorityFacts } from '../auth/authority-facts.js';
import { isDeviceScoped, PERMISSION_CODES } from '../auth/permissions.js';
import type { ListResponse } from '../common/responses.js';
import { ListPages } from '../database/list-pages.js';
import { References } from '../database/references.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { AccessHistoryRepository, type DeviceHistory } from './access-history.repository.js';
import { permissionOf, subjectAt } from './access.service.js';
import type { AccessTimelineEntryDto, AccessTimelineQueryDto } from './dto/access-timeline.dto.js';
import { directionOf } from './dto/access.dto.js';
import { DEFAULT_PAGE_SIZE } from '../common/list/list-spec.js';

const DEVICE_PERMISSIONS = PERMISSION_CODES.filter(isDeviceScoped);
const ACCESS_TABLES = ['users', 'authorities', 'authority_permissions'] as const;

type AuthorityVersion = DeviceHistory['authorities'][number];
type PermissionVersion = DeviceHistory['permissions'][number];
type UserVersion = DeviceHistory['users'][number];

/** What happened at one instant, and why a right came or went. */
interface Cause {
  readonly cause: string;
  readonly xid: string | null;
  readonly resource: string | null;
  readonly actor_id: number | null;
}

const latest = <T extends { readonly from: number }>(
  versions: readonly T[] | undefined,
  instant: number,
): T | undefined => {
  let found: T | undefined;
  for (const version of versions ?? []) if (version.from <= instant) found = version;
  return found;
};

function groupBy<T, K>(rows: readonly T[], key: (row: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const row of rows) groups.set(key(row), [...(groups.get(key(row)) ?? []), row]);
  return groups;
}

function authorityCause(before: AuthorityVersion | undefined, after: AuthorityVersion): string {
  if (before === undefined) return 'authority_created';
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

/**
 * `GET /devices/{id}/access-timeline` (part 6.13): every moment a user gained or lost a
 * device-scoped right on the device through the device's own layer (an authority that is the owner
 * or holds the permission, of a user then allowed anything at all), with its cause, actor and
 * event. The device's history is replayed instant by instant through the rules of part 5, and
 * consecutive answers are compared; expiries are instants of their own.
 */
@Injectable()
export class AccessTimelineService {
  constructor(
    private readonly history: AccessHistoryRepository,
    private readonly pages: ListPages,
    private readonly references: References,
    private readonly uow: UnitOfWork,
  ) {}

  async timeline(deviceId: number, query: AccessTimelineQueryDto): Promise<ListResponse<AccessTimelineEntryDto>> {
    await this.references.device(this.uow.reader, deviceId);
    if (query.permission !== undefined) permissionOf(query.permission, true);
    const page = { page: query.page ?? 1, page_size: query.page_size ?? DEFAULT_PAGE_SIZE };
    const filter = {
      user_id: query.user_id === undefined ? undefined : Number(query.user_id),
      permission: query.permission,
    };
    const identity = { route: 'access-timeline', deviceId, ...filter, ...page, sort: query.sort ?? null };
    return this.pages.readComputed(identity, ACCESS_TABLES, async (caching) => {
      const changesAt = caching ? await this.history.nextExpiry() : undefined;
      const [now, start, history] = await Promise.all([
        this.history.now(),
        this.history.historyStart(),
        this.history.deviceHistory(deviceId),
      ]);
      const entries = replay(history, now.getTime() * 1000, start.getTime() * 1000).filter(
        (entry) =>
          (filter.user_id === undefined || entry.user_id === filter.user_id) &&
          (filter.permission === undefined || entry.permission_code === filter.permission),
      );
      if (directionOf(query.sort, 'desc') === 'desc') entries.reverse();
      const offset = (page.page - 1) * page.page_size;
      return {
        items: entries.slice(offset, offset + page.page_size),
        total: entries.length,
        total_exact: true,
        changesAt,
        meta: { at: now.toISOString() },
      };
    });
  }
}

/** The timeline, oldest first: the rights at each instant compared with those just before. */
function replay(history: DeviceHistory, nowMicros: number, startMicros: number): AccessTimelineEntryDto[] {
  const authorities = groupBy(history.authorities, (row) => row.authority_id);
  const permissions = groupBy(history.permissions, (row) => row.authority_id);
  const users = groupBy(history.users, (row) => row.user_id);
  const instants = new Set<number>();
  for (const row of [...history.authorities, ...history.permissions]) instants.add(row.from);
  for (const row of history.users) if (row.from >= startMicros) instants.add(row.from);
  for (const row of history.authorities)
    if (row.expires_at !== null && row.expires_at > row.from && row.expires_at <= nowMicros)
      instants.add(row.expires_at);
  const rightsAt = (instant: number): Set<string> => {
    const rights = new Set<string>();
    for (const [authorityId, versions] of authorities) {
      const version = latest(versions, instant);
      if (version === undefined) continue;
      const subject = subjectAt(
        ((user) => user && { ...user, grants: [] })(latest(users.get(version.user_id), instant)),
      );
      if (subject === undefined || !admissible(subject)) continue;
      const held = new Map<number, PermissionVersion>();
      for (const row of permissions.get(authorityId) ?? [])
        if (row.from <= instant) held.set(row.authority_permission_id, row);
      const facts: AuthorityFacts = {
        id: authorityId,
        device_id: 0,
        user_id: version.user_id,
        owner: version.owner,
        is_active: version.is_active,
        revoked: version.revoked,
        deleted: version.is_deleted,
        expires_at: version.expires_at === null ? null : new Date(version.expires_at / 1000).toISOString(),
        permissions: [...held.values()].filter((row) => row.is_active).map((row) => row.code),
      };
      for (const code of DEVICE_PERMISSIONS)
        if (authorityPaths(facts, code, instant / 1000).length > 0) rights.add(`${version.user_id} ${code}`);
    }
    return rights;
  };
  const causeOf = (userId: number, code: string, instant: number, previous: number): Cause => {
    for (const [, versions] of authorities) {
      const after = versions.find((row) => row.from === instant && row.user_id === userId);
      if (after !== undefined)
        return {
          cause: instant === startMicros ? 'history_started' : authorityCause(latest(versions, previous), after),
          xid: after.xid,
          resource: `authority/${after.authority_id}`,
          actor_id: after.actor_id,
        };
    }
    const grant = history.permissions.find(
      (row) =>
        row.from === instant &&
        row.code === code &&
        history.authorities.some((a) => a.authority_id === row.authority_id && a.user_id === userId),
    );
    if (grant !== undefined)
      return {
        cause: grant.is_active ? 'permission_granted' : 'permission_revoked',
        xid: grant.xid,
        resource: `authority_permission/${grant.authority_permission_id}`,
        actor_id: grant.actor_id,
      };
    const user = users.get(userId)?.find((row) => row.from === instant);
    if (user !== undefined)
      return {
        cause: userCause(latest(users.get(userId), previous), user),
        xid: user.xid,
        resource: `user/${userId}`,
        actor_id: user.actor_id,
      };
    return { cause: 'expired', xid: null, resource: null, actor_id: null };
  };
  const entries: AccessTimelineEntryDto[] = [];
  let before = new Set<string>();
  let previous = Number.NEGATIVE_INFINITY;
  for (const instant of [...instants].sort((a, b) => a - b)) {
    const now = rightsAt(instant);
    const changes = [
      ...[...now].filter((right) => !before.has(right)).map((right) => ['gained', right] as const),
      ...[...before].filter((right) => !now.has(right)).map((right) => ['lost', right] as const),
    ];
    for (const [change, right] of changes) {
      const [user, code = ''] = right.split(' ');
      const userId = Number(user);
      const cause = causeOf(userId, code, instant, previous);
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
        actor_id: event?.actor_id ?? cause.actor_id,
        event_id: event?.id ?? null,
      });
    }
    before = now;
    previous = instant;
  }
  return entries;
}
