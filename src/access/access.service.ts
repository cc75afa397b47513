import { DECIDED_BY } from '../platform/auth/decision.js';
import { Injectable, Logger } from '@nestjs/common';
import {
  accessPaths,
  admissible,
  decisionOf,
  denialReason,
  globalDecision,
  heldBy,
  type AccessPath,
  type DenialReason,
} from '../access-model/access-rules.js';
import type { Subject } from '../platform/auth/auth-context.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import type { Decision } from '../platform/auth/decision.js';
import { isDeviceScoped, PERMISSIONS, type PermissionCode } from '../platform/auth/permissions.js';
import { ROLES, USER_STATUS } from '../platform/auth/roles.js';
import { effectiveRole } from '../access-model/group-rules.js';
import { ApiError } from '../platform/http/api-error.js';
import type { ListResponse } from '../platform/http/responses.js';
import { ListPages } from '../platform/projections/list-pages.js';
import { UserReferences } from '../users/user-references.repository.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { AccessUsesRepository } from '../access-model/access-uses.repository.js';
import { AccessHistoryRepository, type DeviceAccessAsked, type UserFactsAt } from './access-history.repository.js';
import { DeviceAccessWindowsRepository } from './device-access-windows.repository.js';
import { walkWindows } from './device-access-walk.js';
import type { ListTotal } from '../platform/projections/list-totals.js';
import {
  directionOf,
  pageOf as pageOfQuery,
  type AllowedByDto,
  type AtQueryDto,
  type DeviceAccessDto,
  type DeviceAccessQueryDto,
  type UserAccessDto,
  type UserAccessQueryDto,
} from './dto/access.dto.js';

/** A write to any of these can change an access answer (their history tables are written with them). */
const ACCESS_TABLES = [
  'users',
  'permission_grants',
  'authorities',
  'authority_permissions',
  'groups',
  'group_memberships',
  // Not an access fact, but the answers show each way's last use (part 6.16).
  'access_path_uses',
] as const;
const WAYS = DECIDED_BY;

/**
 * The subject of the rules at a moment, from the facts then (undefined: no such user then): its
 * effective role among its own and its groups' then, its grants and its groups' grants.
 */
export function subjectAt(facts: UserFactsAt | undefined, at?: number): Subject | undefined {
  if (facts === undefined) return undefined;
  const groups = facts.groups ?? [];
  const { role, group_id } = effectiveRole(facts.role_id, groups, at ?? Date.now());
  if (role === undefined) return undefined;
  return {
    user_id: facts.user_id,
    role,
    role_group_id: group_id,
    groups,
    active: facts.status_id === USER_STATUS.active && !facts.is_deleted,
    grants: [...facts.grants, ...(facts.group_grants ?? [])],
  };
}

export function permissionOf(code: string, deviceScopedOnly: boolean): (typeof PERMISSIONS)[number] {
  const permission = PERMISSIONS.find((candidate) => candidate.code === code);
  if (permission === undefined)
    throw new ApiError('PERMISSION_NOT_FOUND', `Permission ${code} does not exist`, { permission: code });
  if (deviceScopedOnly && !isDeviceScoped(code))
    throw new ApiError('PERMISSION_NOT_DEVICE_SCOPED', `${code} is not a device-scoped permission`, {
      permission_id: permission.id,
      permission_code: code,
    });
  return permission;
}

/**
 * The access questions of part 6.13: who may do P on a device, where a user may do P, and either
 * as of a past moment. Facts come from the access history (now or at T), and every answer is
 * judged by the rules of part 5 (`access-rules.ts`), the same functions the guard applies to the
 * live projections; the history's candidate queries only narrow and count.
 */
@Injectable()
export class AccessService {
  private readonly logger = new Logger('AccessService');

  constructor(
    private readonly history: AccessHistoryRepository,
    private readonly pages: ListPages,
    private readonly userReferences: UserReferences,
    private readonly uow: UnitOfWork,
    private readonly uses: AccessUsesRepository,
    private readonly windows: DeviceAccessWindowsRepository,
  ) {}

  /** The moment of a question: undefined for now (the database's, read with the answer). */
  momentOf(at: string | undefined): Promise<Date | undefined> {
    return at === undefined ? Promise.resolve(undefined) : this.momentAsked(at);
  }

  /** A moment asked for: 400 in the future, 422 `HISTORY_NOT_AVAILABLE` before the history. */
  async momentAsked(at: string): Promise<Date> {
    const moment = new Date(at);
    if (moment.getTime() > Date.now())
      throw ApiError.field('at', 'not_future', 'at must not be in the future (leave it out to ask about now)');
    const startsAt = await this.history.historyStart();
    if (moment < startsAt)
      throw new ApiError(
        'HISTORY_NOT_AVAILABLE',
        `The access history begins at ${startsAt.toISOString()}; ${moment.toISOString()} is before it`,
        { at: moment.toISOString(), history_starts_at: startsAt.toISOString() },
      );
    return moment;
  }

  /**
   * `/authz/check?at=`: one user, one permission (on one device) as of the moment. The user must
   * exist (deleted or not) and the device too (404s, in that order).
   */
  async decideAt(
    userId: number,
    permission: PermissionCode,
    deviceId: number | undefined,
    moment: Date,
  ): Promise<{ decision: Decision; paths: AccessPath[]; denial: DenialReason | undefined }> {
    await this.assertUser(userId, true);
    const createdAt = deviceId === undefined ? undefined : await this.deviceCreatedAt(deviceId);
    const subject = subjectAt((await this.history.usersAt([userId], moment)).get(userId), moment.getTime());
    // Before the device existed, nothing was allowed on it.
    if (subject === undefined || (createdAt !== undefined && moment < createdAt))
      return { decision: decisionOf([]), paths: [], denial: denialReason(subject) };
    const authorities =
      deviceId === undefined || !isDeviceScoped(permission)
        ? []
        : await this.history.deviceAuthoritiesAt(deviceId, moment, [userId]);
    const paths = accessPaths(subject, heldBy(subject, authorities, moment.getTime()), permission, moment.getTime());
    return { decision: decisionOf(paths), paths, denial: paths.length === 0 ? denialReason(subject) : undefined };
  }

  /** The user a question is about: any row with `at`, a live one without (a deleted user is 404 now). */
  async assertUser(userId: number, asked: boolean): Promise<void> {
    const user = await this.userReferences.user(this.uow.reader, userId);
    if (user === undefined || (user.is_deleted && !asked)) throw ApiError.notFound('USER_NOT_FOUND', userId);
  }

  /** The device's creation; 404 for an unknown device. */
  async deviceCreatedAt(deviceId: number): Promise<Date> {
    const createdAt = await this.history.deviceCreatedAt(deviceId);
    if (createdAt === undefined) throw ApiError.notFound('DEVICE_NOT_FOUND', deviceId);
    return createdAt;
  }

  async deviceAccess(deviceId: number, query: DeviceAccessQueryDto): Promise<ListResponse<DeviceAccessDto>> {
    const createdAt = await this.deviceCreatedAt(deviceId);
    const permission = permissionOf(query.permission, true);
    const via = new Set<string>(query.via?.split(',') ?? WAYS);
    const groupId = query.group_id === undefined ? null : Number(query.group_id);
    // A way counts when it is one of `via` and, with `group_id=`, runs through a group (which groups
    // the asked one reaches, at the moment, is the candidates' SQL).
    const kept = (path: { decided_by: string; group_id: number | null }): boolean =>
      via.has(path.decided_by) && (groupId === null || path.group_id !== null);
    const moment = await this.momentOf(query.at);
    const page = pageOf(query);
    // Before the device existed nobody could act on it.
    if (moment !== undefined && moment < createdAt)
      return this.pages.readComputed(
        { route: 'device-access-before', deviceId, at: moment.toISOString(), ...page },
        [],
        () => Promise.resolve({ items: [], total: 0, total_exact: true, meta: { at: moment.toISOString() } }),
      );
    const identity = {
      route: 'device-access',
      deviceId,
      permission: permission.code,
      via: [...via].sort(),
      group_id: groupId,
      at: moment?.toISOString() ?? null,
      count: query.count === 'exact' ? 'exact' : 'auto',
      ...page,
    };
    const asked = {
      deviceId,
      permissionId: permission.id,
      roleIds: ROLES.filter((role) => role.admin_access && role.permissions.has(permission.code)).map(
        (role) => role.id,
      ),
      adminRoleIds: ROLES.filter((role) => role.admin_access).map((role) => role.id),
      via,
      groupId,
      moment: moment ?? null,
      direction: page.direction,
    };
    const { page: _page, page_size: _size, ...totalOf } = identity;
    return this.pages.readComputed(
      identity,
      ACCESS_TABLES,
      async (caching, total) => {
        const changesAt =
          moment !== undefined || !(caching || total.remembered) ? undefined : await this.history.nextExpiry();
        const candidates = await this.deviceCandidates(asked, page, query.count === 'exact', total.known);
        const { at, users, authorities } = candidates;
        const items = candidates.ids.flatMap((userId) => {
          const subject = subjectAt(users.get(userId), at.getTime());
          const paths =
            subject === undefined
              ? []
              : accessPaths(subject, heldBy(subject, authorities, at.getTime()), permission.code, at.getTime());
          if (!paths.some(kept)) return this.disagreement('device', deviceId, userId);
          return [{ user_id: userId, allowed_by: paths }];
        });
        return {
          items: await this.withLastUse(items, permission.id),
          total: candidates.total.value,
          total_exact: candidates.total.exact,
          changesAt,
          meta: { at: at.toISOString() },
        };
      },
      totalOf,
    );
  }

  /**
   * The users of a page of the device question and the answer's total. `count=exact` counts every
   * user (the whole answer judged in one query); otherwise the page is read in windows of user ids
   * from the start, and the total, unless remembered, is counted up to `EXACT_UP_TO` and estimated
   * beyond (part 2).
   */
  private async deviceCandidates(
    asked: DeviceAccessAsked,
    page: { readonly page: number; readonly page_size: number },
    exact: boolean,
    known: ListTotal | undefined,
  ): Promise<{
    ids: number[];
    at: Date;
    total: ListTotal;
    users: Map<number, UserFactsAt>;
    authorities: AuthorityFacts[];
  }> {
    const offset = (page.page - 1) * page.page_size;
    if (exact) {
      const counted = await this.history.deviceAccessCandidates({ ...asked, offset, limit: page.page_size });
      const [users, authorities] = await Promise.all([
        this.history.usersAt(counted.ids, counted.moment),
        this.history.deviceAuthoritiesAt(asked.deviceId, counted.moment, counted.ids),
      ]);
      const total = { value: counted.total, exact: true };
      return { ids: counted.ids, at: counted.moment, total, users, authorities };
    }
    // The page's users, their standing and the device's authorities, all in the windows' snapshot.
    return this.windows.inOneSnapshot(async (window, extent, snapshot) => {
      const walked = await walkWindows(window, extent, {
        offset,
        limit: page.page_size,
        counting: known === undefined,
      });
      // A walk that reached the end counted exactly: that total, not a remembered estimate.
      const total = walked.total ?? known;
      if (total === undefined) throw new Error('a walk asked to count answered no total');
      const users = await this.history.usersAt(walked.ids, walked.moment, snapshot);
      const authorities = await this.history.deviceAuthoritiesAt(asked.deviceId, walked.moment, walked.ids, snapshot);
      return { ids: walked.ids, at: walked.moment, total, users, authorities };
    }, asked);
  }

  async userAccess(userId: number, query: UserAccessQueryDto): Promise<ListResponse<UserAccessDto>> {
    await this.assertUser(userId, query.at !== undefined);
    const permission = permissionOf(query.permission, true);
    const moment = await this.momentOf(query.at);
    const page = pageOf(query);
    const identity = {
      route: 'user-access',
      userId,
      permission: permission.code,
      at: moment?.toISOString() ?? null,
      ...page,
    };
    return this.pages.readComputed(identity, ACCESS_TABLES, async (caching) => {
      const changesAt = moment !== undefined || !caching ? undefined : await this.history.nextExpiry();
      // The candidates first: they fix the moment (now, when none was asked) that the rest reads.
      const candidates = await this.history.userAccessCandidates({
        userId,
        permissionId: permission.id,
        moment: moment ?? null,
        offset: (page.page - 1) * page.page_size,
        limit: page.page_size,
        direction: page.direction,
      });
      const at = candidates.moment;
      const [users, found] = await Promise.all([
        this.history.usersAt([userId], at),
        this.history.authoritiesAt(candidates.ids, at),
      ]);
      const subject = subjectAt(users.get(userId), at.getTime());
      const everywhere = subject !== undefined && globalDecision(subject, permission.code, at.getTime()).allowed;
      const meta = { at: at.toISOString(), scope: everywhere ? 'all' : 'devices' };
      if (subject === undefined || !admissible(subject))
        return { items: [], total: 0, total_exact: true, changesAt, meta };
      const authorities = new Map(found.map((authority) => [authority.id, authority]));
      // Each row's ways: every authority the user held on its device then (its own and its groups'),
      // as `/devices/{id}/access` and `/authz/check` judge them.
      const onDevices = await this.history.userAuthoritiesOnDevicesAt(
        userId,
        found.map((authority) => authority.device_id),
        at,
      );
      const items = candidates.ids.flatMap((authorityId) => {
        const authority: AuthorityFacts | undefined = authorities.get(authorityId);
        const held = onDevices.filter((candidate) => candidate.device_id === authority?.device_id);
        const paths = accessPaths(subject, heldBy(subject, held, at.getTime()), permission.code, at.getTime());
        if (authority === undefined || !paths.some((path) => path.authority_id === authorityId))
          return this.disagreement('user', userId, authorityId);
        return [{ device_id: authority.device_id, allowed_by: paths }];
      });
      return {
        items: await this.withLastUse(items, permission.id),
        total: candidates.total,
        total_exact: true,
        changesAt,
        meta,
      };
    });
  }

  /**
   * Each way with the last use of its path (part 6.16): a grant's, or the authority permission's
   * of the authority that holds `permissionId`; null for a role, ownership or a path never used.
   */
  private async withLastUse<T extends { readonly allowed_by: readonly AccessPath[] }>(
    items: readonly T[],
    permissionId: number,
  ): Promise<(T & { allowed_by: AllowedByDto[] })[]> {
    const ways = items.flatMap((item) => item.allowed_by);
    const grants = ways.flatMap((way) =>
      way.decided_by === 'permission_grant' && way.grant_id !== null ? [way.grant_id] : [],
    );
    const pairs = ways.flatMap((way) =>
      way.decided_by === 'authority_permission' && way.authority_id !== null
        ? [{ authority_id: way.authority_id, permission_id: permissionId }]
        : [],
    );
    const uses = await this.uses.lastUses(grants, pairs);
    const lastUse = (way: AccessPath): string | null => {
      const key =
        way.decided_by === 'permission_grant'
          ? `g:${way.grant_id}`
          : way.decided_by === 'authority_permission'
            ? `a:${way.authority_id}:${permissionId}`
            : undefined;
      return key === undefined ? null : (uses.get(key)?.toISOString() ?? null);
    };
    return items.map((item) => ({
      ...item,
      allowed_by: item.allowed_by.map((way) => ({ ...way, last_used_at: lastUse(way) })),
    }));
  }

  /** The candidate query and the rules disagree: a defect, logged; the rules win. */
  private disagreement(kind: string, id: number, candidate: number): [] {
    this.logger.error(`access ${kind} ${id}: candidate ${candidate} is not allowed by the rules`);
    return [];
  }
}

function pageOf(query: AtQueryDto & { readonly sort?: string }): {
  page: number;
  page_size: number;
  direction: 'asc' | 'desc';
} {
  return { ...pageOfQuery(query), direction: directionOf(query.sort, 'asc') };
}
