import { Injectable } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import { earlierEnd } from '../access-model/authorization.service.js';
import { GroupFactsRepository } from '../access-model/group-facts.repository.js';
import { nestingProblem } from '../access-model/group-rules.js';
import { AuditService, type AuditRecord, type Changes } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { ApiError } from '../platform/http/api-error.js';
import { futureTimestamp } from '../platform/http/timestamps.js';
import { ResourceResponse } from '../platform/http/responses.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { turnsFor } from '../platform/database/write-turns.js';
import { UserReferences } from '../users/user-references.repository.js';
import type {
  AddMembersDto,
  MemberRefDto,
  MemberResultDto,
  MembershipDto,
  MembersResponseDto,
  RemoveMembersDto,
} from './dto/group.dto.js';
import { GroupMembershipsRepository, type LiveMembership } from './group-memberships.repository.js';
import { GroupsRepository } from './groups.repository.js';

/** One item of a change of members, as judged. */
export interface Item {
  readonly index: number;
  readonly user_id: number | null;
  readonly group_id: number | null;
  status?: string;
  error?: ApiError;
  membership?: LiveMembership;
  /** The users the item's member reaches (itself, or a nested group's users). */
  reached?: number[];
  membership_id?: number;
}

export function itemOf(member: MemberRefDto, index: number): Item {
  return { index, user_id: member.user_id ?? null, group_id: member.group_id ?? null };
}

function resultOf(item: Item): MemberResultDto {
  return {
    index: item.index,
    user_id: item.user_id,
    group_id: item.group_id,
    status: item.error === undefined ? (item.status ?? 'failed') : 'failed',
    membership_id: item.membership_id ?? item.membership?.id ?? null,
    error: item.error === undefined ? null : { code: item.error.code, message: item.error.message },
  };
}

function responseOf(items: readonly Item[]): ResourceResponse<MembersResponseDto> {
  const results = items.map(resultOf);
  const failed = results.filter((result) => result.status === 'failed').length;
  return new ResourceResponse({ accepted: results.length, processed: results.length - failed, failed, results });
}

const sameMember = (item: Item, membership: LiveMembership): boolean =>
  item.user_id !== null ? membership.user_id === item.user_id : membership.member_group_id === item.group_id;

/**
 * Changes of a group's members (part 6.18): a bulk of users and groups, each item judged alone
 * (a failed item fails only itself), written in one transaction with one audit event per member.
 * Adding hands the group's role and rights (its own and its ancestors') to every user the new
 * member reaches: the rules of part 5 through groups. Removing is not limited.
 */
@Injectable()
export class GroupMembersService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly groups: GroupsRepository,
    private readonly memberships: GroupMembershipsRepository,
    private readonly users: UserReferences,
    private readonly facts: GroupFactsRepository,
    private readonly groupAccess: GroupAccess,
    private readonly access: AccessWatch,
    private readonly audit: AuditService,
  ) {}

  async add(actor: AuthContext, groupId: number, dto: AddMembersDto): Promise<ResourceResponse<MembersResponseDto>> {
    const expiresAt = dto.expires_at === undefined ? null : futureTimestamp(dto.expires_at, 'expires_at');
    const items = dto.members.map(itemOf);
    return this.uow.run(
      async (tx) => {
        // The nesting lock before the group's row: a nesting then holds the rows below the group it
        // nests (its reach), and a second nesting holding one of those while it waited for the
        // nesting lock would close a cycle of waits.
        if (items.some((item) => item.group_id !== null)) await this.memberships.lockNesting(tx);
        await this.groups.lockLive(tx, groupId);
        await this.addIn(tx, actor, groupId, items, { expires_at: expiresAt, reason: dto.reason ?? null });
        return responseOf(items);
      },
      { turns: turnsFor(items.length) },
    );
  }

  async remove(
    _actor: AuthContext,
    groupId: number,
    dto: RemoveMembersDto,
  ): Promise<ResourceResponse<MembersResponseDto>> {
    const items = dto.members.map(itemOf);
    return this.uow.run(
      async (tx) => {
        await this.groups.lockLive(tx, groupId);
        await this.removeIn(tx, groupId, items, dto.reason ?? null);
        return responseOf(items);
      },
      { turns: turnsFor(items.length) },
    );
  }

  /**
   * Adds the members to the locked live group in the caller's transaction; each item is judged
   * alone and says how it went (`error`, or `status` added / already_member).
   */
  async addIn(
    tx: Tx,
    actor: AuthContext,
    groupId: number,
    items: Item[],
    options: { readonly expires_at: Date | null; readonly reason: string | null },
  ): Promise<void> {
    if (items.some((item) => item.group_id !== null)) await this.memberships.lockNesting(tx);
    await this.judgeReferences(tx, items);
    const live = await this.liveOf(tx, groupId, items);
    for (const item of items) {
      if (item.error !== undefined) continue;
      const membership = live.find((candidate) => sameMember(item, candidate));
      if (membership !== undefined) {
        item.status = 'already_member';
        item.membership = membership;
      }
    }
    await this.judgeNesting(tx, groupId, items);
    // A membership hands on what the group confers: it lasts no longer than the actor's own way to it (part 5).
    const expiresAt = earlierEnd(options.expires_at, await this.judgeConferral(tx, actor, groupId, items));
    const accepted = items.filter((item) => item.error === undefined && item.status === undefined);
    const reached = [...new Set(accepted.flatMap((item) => item.reached ?? []))];
    await this.watch(tx, groupId, reached);
    const unique = dedupe(accepted);
    await this.memberships.closeExpired(tx, groupId, userIds(unique), groupIds(unique));
    const ids = await this.memberships.add(
      tx,
      groupId,
      unique.map((item) => ({ user_id: item.user_id, member_group_id: item.group_id })),
      { ...options, expires_at: expiresAt },
    );
    unique.forEach((item, index) => (item.membership_id = ids[index]));
    for (const item of accepted) {
      item.status = 'added';
      item.membership_id ??= unique.find((other) => sameMember(other, toLive(item)))?.membership_id;
    }
    await this.finish(tx, groupId, ids, 'group.member_add', options.reason, reached);
  }

  /** Removes the members from the locked live group in the caller's transaction (status removed / not_member). */
  async removeIn(tx: Tx, groupId: number, items: Item[], reason: string | null): Promise<void> {
    await this.judgeReferences(tx, items, true);
    const live = await this.liveOf(tx, groupId, items);
    const removing = new Map<number, Item>();
    for (const item of items) {
      if (item.error !== undefined) continue;
      const membership = live.find((candidate) => sameMember(item, candidate));
      if (membership === undefined) item.status = 'not_member';
      else {
        item.status = 'removed';
        item.membership = membership;
        removing.set(membership.id, item);
      }
    }
    const reached = await this.reachedBy(tx, [...removing.values()]);
    await this.watch(tx, groupId, reached);
    const ids = [...removing.keys()];
    await this.memberships.remove(tx, ids, reason);
    await this.finish(tx, groupId, ids, 'group.member_remove', reason, reached);
  }

  /**
   * An access review's close (part 6.16): removes each user's membership that is still live, as
   * `remove` writes it (access watched, one audit event per membership with `reason`), inside the
   * close's transaction; the review's decisions authorized them. Answers the ids it removed; the
   * others had already ended.
   */
  async removeReviewed(
    tx: Tx,
    memberships: readonly { readonly id: number; readonly group_id: number; readonly user_id: number }[],
    reason: string,
  ): Promise<Set<number>> {
    if (memberships.length === 0) return new Set();
    const byGroup = new Map<number, number[]>();
    for (const membership of memberships)
      byGroup.set(membership.group_id, [...(byGroup.get(membership.group_id) ?? []), membership.id]);
    const groups = [...byGroup.keys()].sort((a, b) => a - b);
    // Deleted groups too: a membership left in one would return with its restore.
    for (const groupId of groups) await this.groups.lock(tx, groupId);
    const users = [...new Set(memberships.map((membership) => membership.user_id))];
    await this.access.watch(tx, { users });
    const removed = new Set<number>();
    for (const groupId of groups) {
      const ids = await this.memberships.removeLive(tx, byGroup.get(groupId) ?? [], reason);
      ids.forEach((id) => removed.add(id));
      const of = memberships.filter((membership) => ids.includes(membership.id)).map((m) => m.user_id);
      await this.finish(tx, groupId, ids, 'group.member_remove', reason, of);
    }
    return removed;
  }

  /**
   * Watches the users a change of members reaches, for only what the group's chain confers (a
   * group of 100 000 that confers one right is judged on that right, not on all 60).
   */
  private async watch(tx: Tx, groupId: number, reached: readonly number[]): Promise<void> {
    if (reached.length === 0) return;
    const permissions = await this.groupAccess.membershipScope(tx, groupId);
    if (permissions?.length === 0) return;
    await this.access.watch(tx, { users: [...reached], ...(permissions === undefined ? {} : { permissions }) });
  }

  /** 404s per item: an unknown (or deleted) user or group fails that item alone. */
  private async judgeReferences(tx: Tx, items: Item[], removing = false): Promise<void> {
    // A deleted group or user may still be removed (else the nesting would return on its restore);
    // neither can be added.
    const groups = await this.groups.existingIds(
      tx.db,
      items.flatMap((item) => (item.group_id === null ? [] : [item.group_id])),
      removing,
    );
    const users = await this.users.presence(tx.db, userIds(items));
    for (const item of items) {
      if (item.group_id !== null && !groups.has(item.group_id))
        item.error = ApiError.notFound('GROUP_NOT_FOUND', item.group_id);
      if (item.user_id !== null) {
        const user = users.get(item.user_id);
        if (user === undefined || (user.is_deleted && !removing))
          item.error = ApiError.notFound('USER_NOT_FOUND', item.user_id);
      }
    }
  }

  private liveOf(tx: Tx, groupId: number, items: readonly Item[]): Promise<LiveMembership[]> {
    return this.memberships.live(tx, groupId, userIds(items), groupIds(items));
  }

  /** 422 `GROUP_NESTING_INVALID` for a group that would contain itself or nest too deep. */
  private async judgeNesting(tx: Tx, groupId: number, items: readonly Item[]): Promise<void> {
    for (const item of items) {
      if (item.error !== undefined || item.status !== undefined || item.group_id === null) continue;
      const shape = await this.facts.nestingShape(tx.db, groupId, item.group_id);
      const reason = nestingProblem(groupId, item.group_id, shape.below, shape.aboveHeight);
      if (reason !== undefined)
        item.error = new ApiError(
          'GROUP_NESTING_INVALID',
          reason === 'cycle'
            ? `Group ${item.group_id} contains group ${groupId}: nesting it would make a cycle`
            : `Nesting group ${item.group_id} in group ${groupId} would make more than 5 levels`,
          { reason, group_id: groupId, member_group_id: item.group_id },
        );
    }
  }

  /** The rules of part 5 through groups, for each item still standing. */
  /** Judges each item's conferral; answers when what it hands on must end (the actor's own ways' end), or null. */
  private async judgeConferral(tx: Tx, actor: AuthContext, groupId: number, items: Item[]): Promise<Date | null> {
    const standing = items.filter((item) => item.error === undefined && item.status === undefined);
    if (standing.length === 0) return null;
    for (const item of standing)
      item.reached = item.user_id !== null ? [item.user_id] : await this.groupAccess.reached(tx, [item.group_id ?? 0]);
    const conferred = await this.groupAccess.conferredBy(tx, groupId);
    const problems = await this.groupAccess.judge(
      tx,
      actor,
      conferred,
      standing.map((item) => item.reached ?? []),
    );
    standing.forEach((item, index) => {
      const problem = problems[index];
      if (problem !== undefined) item.error = problem;
    });
    return standing.some((item) => item.error === undefined)
      ? this.groupAccess.conferralLimit(actor, conferred.permissions)
      : null;
  }

  private async reachedBy(tx: Tx, items: readonly Item[]): Promise<number[]> {
    const users = items.flatMap((item) => (item.user_id === null ? [] : [item.user_id]));
    const nested = await this.groupAccess.reached(
      tx,
      items.flatMap((item) => (item.group_id === null ? [] : [item.group_id])),
    );
    return [...new Set([...users, ...nested])];
  }

  /** One audit event per membership (its `data` the membership), then the cache's side of it. */
  private async finish(
    tx: Tx,
    groupId: number,
    membershipIds: readonly number[],
    action: 'group.member_add' | 'group.member_remove',
    reason: string | null,
    reached: readonly number[],
  ): Promise<void> {
    if (membershipIds.length === 0) return;
    const memberships = await this.memberships.presented(tx, membershipIds);
    const events: AuditRecord[] = memberships.map((membership) => ({
      action,
      resource_id: groupId,
      reason,
      data: membership,
      changes: memberChanges(action, membership),
    }));
    await this.audit.recordMany(tx, events);
    this.groups.membersChanged(tx, [groupId]);
    this.groupAccess.changed(tx, reached);
  }
}

const userIds = (items: readonly Item[]): number[] =>
  items.flatMap((item) => (item.user_id === null ? [] : [item.user_id]));
const groupIds = (items: readonly Item[]): number[] =>
  items.flatMap((item) => (item.group_id === null ? [] : [item.group_id]));

const toLive = (item: Item): LiveMembership => ({ id: 0, user_id: item.user_id, member_group_id: item.group_id });

/** The first item of each member (a member named twice is added once; both items say `added`). */
function dedupe(items: readonly Item[]): Item[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const key = item.user_id === null ? `g${item.group_id}` : `u${item.user_id}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** What an audit event of a member's addition or removal says changed: the member, and the removal's stamps. */
function memberChanges(action: 'group.member_add' | 'group.member_remove', membership: MembershipDto): Changes {
  const member = membership.user_id ?? { group_id: membership.member_group_id };
  if (action === 'group.member_add') return { member: [null, member] };
  return {
    member: [member, null],
    removed_at: [null, membership.removed_at],
    removed_by: [null, membership.removed_by],
    remove_reason: [null, membership.remove_reason],
  };
}
