import { Injectable } from '@nestjs/common';
import { admissible, authorityPaths } from '../access-model/access-rules.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import { isDeviceScoped, PERMISSION_CODES } from '../platform/auth/permissions.js';
import type { ListResponse } from '../platform/http/responses.js';
import { ListPages } from '../platform/projections/list-pages.js';
import { AuthorityReferences } from '../authorities/authority-references.repository.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { AccessHistoryRepository, type DeviceHistory } from './access-history.repository.js';
import { permissionOf, subjectAt } from './access.service.js';
import type { AccessTimelineEntryDto, AccessTimelineQueryDto } from './dto/access-timeline.dto.js';
import { directionOf, pageOf } from './dto/access.dto.js';

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
    private readonly authorityReferences: AuthorityReferences,
    private readonly uow: UnitOfWork,
  ) {}

  async timeline(deviceId: number, query: AccessTimelineQueryDto): Promise<ListResponse<AccessTimelineEntryDto>> {
    await this.authorityReferences.device(this.uow.reader, deviceId);
    if (query.permission !== undefined) permissionOf(query.permission, true);
    const page = pageOf(query);
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

type Change =
  | { readonly kind: 'authority'; readonly row: AuthorityVersion }
  | { readonly kind: 'permission'; readonly row: PermissionVersion }
  | { readonly kind: 'user'; readonly row: UserVersion }
  /** An authority's or one of its permissions' expiry: the clock alone changes its rights. */
  | { readonly kind: 'expiry'; readonly authority_id: number };

/** A µs instant as the API shows it (to the millisecond, as the rules read expiries), or null. */
const isoOf = (micros: number | null): string | null =>
  micros === null ? null : new Date(Math.floor(micros / 1000)).toISOString();

/**
 * The timeline, oldest first. The device's versions are applied instant by instant (µs); after
 * each instant the rights of the authorities it touched are judged again by the rules and
 * compared with what they were, so the work is the number of changes, not changes × authorities.
 * A right's cause is the change that touched that very right (an authority permission), else its
 * authority, else its holder, else the clock (an expiry).
 */
function replay(history: DeviceHistory, nowMicros: number, startMicros: number): AccessTimelineEntryDto[] {
  const changes = new Map<number, Change[]>();
  const add = (instant: number, change: Change): void => {
    const list = changes.get(instant);
    if (list === undefined) changes.set(instant, [change]);
    else list.push(change);
  };
  for (const row of history.authorities) {
    add(row.from, { kind: 'authority', row });
    if (row.expires_at !== null && row.expires_at > row.from && row.expires_at <= nowMicros)
      add(row.expires_at, { kind: 'expiry', authority_id: row.authority_id });
  }
  for (const row of history.permissions) {
    add(row.from, { kind: 'permission', row });
    if (row.is_active && row.expires_at !== null && row.expires_at > row.from && row.expires_at <= nowMicros)
      add(row.expires_at, { kind: 'expiry', authority_id: row.authority_id });
  }
  for (const row of history.users) add(row.from, { kind: 'user', row });

  const authorities = new Map<number, AuthorityVersion>();
  const held = new Map<number, Map<number, PermissionVersion>>();
  const users = new Map<number, UserVersion>();
  const ofUser = new Map<number, Set<number>>();
  const rights = new Map<number, ReadonlySet<string>>();
  const entries: AccessTimelineEntryDto[] = [];

  const rightsOf = (authorityId: number, instant: number): ReadonlySet<string> => {
    const version = authorities.get(authorityId);
    const user = version === undefined ? undefined : users.get(version.user_id);
    const subject = subjectAt(user && { ...user, grants: [] });
    if (version === undefined || subject === undefined || !admissible(subject)) return new Set();
    const facts: AuthorityFacts = {
      id: authorityId,
      device_id: 0,
      user_id: version.user_id,
      owner: version.owner,
      is_active: version.is_active,
      revoked: version.revoked,
      deleted: version.is_deleted,
      expires_at: isoOf(version.expires_at),
      authority_permissions: [...(held.get(authorityId)?.values() ?? [])]
        .filter((row) => row.is_active)
        .map((row) => ({ code: row.code, expires_at: isoOf(row.expires_at) })),
    };
    return new Set(DEVICE_PERMISSIONS.filter((code) => authorityPaths(facts, code, instant / 1000).length > 0));
  };

  for (const instant of [...changes.keys()].sort((a, b) => a - b)) {
    const touched = new Set<number>();
    const byAuthority = new Map<number, Cause>();
    const byPermission = new Map<string, Cause>();
    const byUser = new Map<number, Cause>();
    // What the instant's first version of each record says changed, and who changed it.
    const started = instant === startMicros;
    const causeOf = (
      cause: string,
      row: { xid: Cause['xid']; actor_id: Cause['actor_id'] },
      resource: string,
    ): Cause => ({
      cause: started ? 'history_started' : cause,
      xid: row.xid,
      resource,
      actor_id: row.actor_id,
    });
    for (const change of changes.get(instant) ?? []) {
      if (change.kind === 'authority') {
        const { row } = change;
        const cause = authorityCause(authorities.get(row.authority_id), row);
        authorities.set(row.authority_id, row);
        ofUser.set(row.user_id, (ofUser.get(row.user_id) ?? new Set()).add(row.authority_id));
        byAuthority.set(row.authority_id, causeOf(cause, row, `authority/${row.authority_id}`));
        touched.add(row.authority_id);
      } else if (change.kind === 'permission') {
        const { row } = change;
        const rows = held.get(row.authority_id) ?? new Map<number, PermissionVersion>();
        held.set(row.authority_id, rows.set(row.authority_permission_id, row));
        byPermission.set(
          `${row.authority_id} ${row.code}`,
          causeOf(
            row.is_active ? 'permission_granted' : 'permission_revoked',
            row,
            `authority_permission/${row.authority_permission_id}`,
          ),
        );
        touched.add(row.authority_id);
      } else if (change.kind === 'user') {
        const { row } = change;
        const cause = userCause(users.get(row.user_id), row);
        users.set(row.user_id, row);
        byUser.set(row.user_id, causeOf(cause, row, `user/${row.user_id}`));
        for (const authorityId of ofUser.get(row.user_id) ?? []) touched.add(authorityId);
      } else touched.add(change.authority_id);
    }
    for (const authorityId of touched) {
      const before = rights.get(authorityId) ?? new Set<string>();
      const after = rightsOf(authorityId, instant);
      rights.set(authorityId, after);
      const userId = authorities.get(authorityId)?.user_id ?? 0;
      const moved = [
        ...[...after].filter((code) => !before.has(code)).map((code) => ['gained', code] as const),
        ...[...before].filter((code) => !after.has(code)).map((code) => ['lost', code] as const),
      ];
      for (const [change, code] of moved) {
        const cause = byPermission.get(`${authorityId} ${code}`) ??
          byAuthority.get(authorityId) ??
          byUser.get(userId) ?? { cause: 'expired', xid: null, resource: null, actor_id: null };
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
    }
  }
  return entries;
}
