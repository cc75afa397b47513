import type { EntityManager } from 'typeorm';
import { Injectable } from '@nestjs/common';
import type { Subject } from '../platform/auth/auth-context.js';
import type { Tx } from '../platform/database/unit-of-work.js';
import { ApiError } from '../platform/http/api-error.js';
import { ROLE, roleById } from '../platform/auth/roles.js';
import { AuthContextService } from './auth-context.service.js';
import { AuthorizationService, earlierEnd } from './authorization.service.js';
import { GroupFactsRepository } from './group-facts.repository.js';
import { AccessFactsRepository, type UserVersions } from './access-facts.repository.js';
import { assertMayWriteUser, outranks } from './user-rules.js';

/** What a change hands to the users a group reaches (part 5, groups). */
export interface Conferral {
  /** The users who receive it: the group's members (or the new members). */
  readonly reached: readonly number[];
  /** Roles conferred (the group's and its ancestors', or a new role). */
  readonly roles: readonly number[];
  /** Permission codes conferred everywhere (the groups' grants, or a new grant). */
  readonly permissions: readonly string[];
}

/** A transaction, or any manager to read through (a check made before the write's transaction). */
type Reading = Pick<Tx, 'db'>;

/** Users judged per statement: the rank rule reads each one's effective role. */
const RANK_BATCH = 1000;
/** Up to this many users reached by a change have their entries rebuilt after the commit; more are marked stale in it. */
export const REBUILT_UP_TO = 1000;
/** Users whose versions are read per statement when marking their entries stale. */
const MARKED_BATCH = 10_000;

function escalation(targetRoleId: number, message: string): ApiError {
  return new ApiError('ROLE_ESCALATION_FORBIDDEN', message, { target_role_id: targetRoleId });
}

/**
 * Groups in the rules of part 5 and in the cache. Putting a user into a group, nesting a group, or
 * giving a group a role or a right hands each of those to every user it reaches: judged by the
 * self rule, the rank rule and the delegation rule, in that order, before anything is written.
 * After a commit that changed what a group confers, every user it reaches gets its auth context
 * rebuilt (`user_groups` bumped in the write, so an entry loaded before can never overwrite it).
 */
@Injectable()
export class GroupAccess {
  private readonly listeners: ((users: readonly number[]) => Promise<void>)[] = [];
  private readonly groupListeners: ((tx: Tx, groups: readonly number[]) => void)[] = [];
  private readonly staleListeners: ((versions: ReadonlyMap<number, UserVersions>) => Promise<boolean>)[] = [];

  constructor(
    private readonly facts: GroupFactsRepository,
    private readonly versions: AccessFactsRepository,
    private readonly authorization: AuthorizationService,
    private readonly authContexts: AuthContextService,
  ) {}

  /**
   * The users the groups reach now (read in the write, so it sees its own changes), with the
   * groups below them held until the write ends (`holdReach`): no user joins or leaves the reach
   * unseen while what it confers changes.
   */
  async reached(tx: Reading, groupIds: readonly number[]): Promise<number[]> {
    if (groupIds.length === 0) return [];
    await this.holdReach(tx, groupIds);
    return this.facts.reachedUsers(tx.db, groupIds);
  }

  /**
   * Locks every group below these (themselves included) `FOR SHARE` until the write ends. A write
   * of members locks its group's row for update, so one in flight is waited for and one that
   * comes later reads what the group confers after this write commits. Without it, a revoke read
   * the reach while a member joined: neither saw the other, and the member kept the revoked right
   * cached. Read again until nothing new is below: a nesting that committed between the read and
   * the lock brings groups not yet held.
   */
  private async holdReach(tx: Reading, groupIds: readonly number[]): Promise<void> {
    const held = new Set<number>();
    for (;;) {
      const fresh = (await this.facts.groupsBelow(tx.db, groupIds)).filter((id) => !held.has(id));
      if (fresh.length === 0) return;
      await this.facts.shareGroups(tx.db, fresh);
      for (const id of fresh) held.add(id);
    }
  }

  /** What a group confers now: its role and its ancestors' roles, and their live grants' permissions. */
  async conferredBy(tx: Reading, groupId: number): Promise<{ roles: number[]; permissions: string[] }> {
    const chain = await this.facts.chainsAbove(tx.db, groupId);
    const roles = chain.flatMap((group) => (group.role_id === null ? [] : [group.role_id]));
    const permissions = await this.facts.grantedPermissions(
      tx.db,
      chain.map((group) => group.group_id),
    );
    return { roles, permissions };
  }

  /**
   * What a change of the group's members can change, for a watch: every permission when the group
   * or a group above it carries a role (a role moves the effective role, hence everything),
   * otherwise only the permissions their grants and authority permissions hold. Undefined: all.
   */
  async membershipScope(tx: Reading, groupId: number): Promise<string[] | undefined> {
    const chain = await this.facts.chainsAbove(tx.db, groupId);
    if (chain.some((group) => group.role_id !== null)) return undefined;
    const groups = chain.map((group) => group.group_id);
    const codes = [
      ...(await this.facts.grantedPermissions(tx.db, groups)),
      ...(await this.facts.authorityPermissionCodes(tx.db, groups)),
    ];
    return [...new Set(codes)];
  }

  /**
   * The rules of part 5 for handing `conferral` to its users: 422 `SELF_ACTION_FORBIDDEN` when the
   * actor is among them, 403 `ROLE_ESCALATION_FORBIDDEN` unless the actor outranks every user
   * reached and every role conferred, 403 `DELEGATION_FORBIDDEN` for the first permission the actor
   * does not hold itself.
   */
  async assertMayConfer(tx: Reading, actor: Subject, conferral: Conferral): Promise<void> {
    const [problem] = await this.judge(tx, actor, conferral, [conferral.reached]);
    if (problem !== undefined) throw problem;
  }

  /**
   * `assertMayConfer` for many items at once (a change of members): what is conferred is the same
   * for each, the users each item reaches differ. One read of every user's effective role; the
   * first problem of each item, or undefined when it may go ahead.
   */
  async judge(
    tx: Reading,
    actor: Subject,
    conferred: Omit<Conferral, 'reached'>,
    items: readonly (readonly number[])[],
  ): Promise<(ApiError | undefined)[]> {
    const shared = await this.conferredProblem(actor, conferred);
    // A super_admin outranks everyone it reaches (`assertMayWriteUser`): nothing to read.
    const everyone =
      actor.role.id === ROLE.super_admin ? [] : [...new Set(items.flat())].filter((id) => id !== actor.user_id);
    const roles = new Map<number, number>();
    for (let start = 0; start < everyone.length; start += RANK_BATCH)
      for (const [userId, roleId] of await this.facts.effectiveRoles(tx.db, everyone.slice(start, start + RANK_BATCH)))
        if (roleById(roleId) !== undefined) roles.set(userId, roleId);
    return items.map((reached) => {
      if (reached.includes(actor.user_id))
        return new ApiError(
          'SELF_ACTION_FORBIDDEN',
          'You cannot give rights to a group you are or would become a member of',
          { action: 'group_conferral', user_id: actor.user_id },
        );
      for (const userId of reached) {
        const roleId = roles.get(userId);
        if (roleId === undefined) continue;
        try {
          assertMayWriteUser(actor, { id: userId, role_id: roleId });
        } catch (error) {
          if (error instanceof ApiError) return error;
          throw error;
        }
      }
      return shared;
    });
  }

  /** The rank of the roles conferred, then delegation of the permissions: the same for every item. */
  private async conferredProblem(actor: Subject, conferred: Omit<Conferral, 'reached'>): Promise<ApiError | undefined> {
    try {
      for (const roleId of conferred.roles) this.assertMayConferRole(actor, roleId);
      for (const permission of conferred.permissions) await this.authorization.assertMayDelegate(actor, permission);
      return undefined;
    } catch (error) {
      if (error instanceof ApiError) return error;
      throw error;
    }
  }

  /**
   * When what a conferral hands on must end (part 5): the earliest, over the permissions conferred,
   * of the last end of the actor's own ways to each; null when none ends. The actor holds them all
   * (`judge` said so).
   */
  async conferralLimit(actor: Subject, permissions: readonly string[]): Promise<Date | null> {
    let limit: Date | null = null;
    for (const permission of permissions)
      limit = earlierEnd(limit, await this.authorization.delegationLimit(actor, permission));
    return limit;
  }

  /** A role is conferred only by an actor who outranks it (a super_admin may confer any). */
  assertMayConferRole(actor: Subject, roleId: number): void {
    if (roleById(roleId) === undefined)
      throw new ApiError('ROLE_NOT_FOUND', `Role ${roleId} does not exist`, { role_id: roleId });
    if (actor.role.id === ROLE.super_admin || outranks(actor.role.id, roleId)) return;
    throw escalation(roleId, `Your role (${actor.role.code}) must outrank the role a group confers`);
  }

  /**
   * In the write: the users whose groups changed get a new `user_groups` version (their detail's
   * effective role and their auth context), or, for a change of a group's rights alone, a new
   * `user` version (their auth context); after commit their contexts are rebuilt.
   */
  changed(tx: Tx, users: readonly number[], scope: 'user_groups' | 'user' = 'user_groups'): void {
    if (users.length === 0) return;
    if (users.length <= REBUILT_UP_TO) {
      tx.bumpProjections(scope, users);
      tx.afterCommit(() => this.refresh(users));
      return;
    }
    // Rebuilding 100 000 contexts after the commit took some 17 s, past what a write waits for its
    // work after the commit, and the whole cache was dropped for it (a herd of misses for every
    // user it did not touch). Their entries are marked stale at their new versions instead, in
    // the write, before it commits: a read after the commit loads them again, one from before
    // can no longer fill an older one, and the other users' entries stay. The bump moves their
    // versions far enough (`marked`) that a write of one of them committing meanwhile (a PATCH),
    // which does not count it, rebuilds below the marker instead of on it; another marked write
    // waits for this one's commit (the unit of work makes marked bumps one at a time). Their
    // details show their groups (the effective role): marked only when those changed.
    tx.bumpProjections(scope, users, { marked: true });
    const details = scope === 'user_groups';
    tx.onBumped(async () => {
      // A marker lost inside the transaction is a lost write the commit's follower would not see
      // (it counts from the commit): a task failing after the commit makes it drop the cache.
      if (!(await this.markStale(tx.db, users, details)))
        tx.afterCommit(() =>
          Promise.reject(new Error('the entries of the users a change reached were not marked stale')),
        );
    });
  }

  /** Registers what to rebuild for groups whose members changed with no write of theirs (an expiry). */
  onGroupsChanged(listener: (tx: Tx, groups: readonly number[]) => void): void {
    this.groupListeners.push(listener);
  }

  /** In the write: the groups' members changed (their details are rebuilt by the groups module). */
  groupsChanged(tx: Tx, groups: readonly number[]): void {
    if (groups.length > 0) for (const listener of this.groupListeners) listener(tx, groups);
  }

  /**
   * Registers what else to mark stale for more users than are rebuilt, when their groups changed
   * (their details), at the versions the write read (`UserVersions`, by user); false when lost.
   */
  onUsersStale(listener: (versions: ReadonlyMap<number, UserVersions>) => Promise<boolean>): void {
    this.staleListeners.push(listener);
  }

  /** Registers what else to rebuild for users whose groups changed (the users module: their details). */
  onUsersChanged(listener: (users: readonly number[]) => Promise<void>): void {
    this.listeners.push(listener);
  }

  /**
   * Marks the users' context entries (and their details, when their groups changed) stale at the
   * versions the write's `db` reads; false when a call did not land.
   */
  private async markStale(db: EntityManager, users: readonly number[], details: boolean): Promise<boolean> {
    let landed = true;
    for (let start = 0; start < users.length; start += MARKED_BATCH) {
      const versions = await this.versions.userVersions(db, users.slice(start, start + MARKED_BATCH));
      if (!(await this.authContexts.markStale(versions))) landed = false;
      if (details) for (const listener of this.staleListeners) if (!(await listener(versions))) landed = false;
    }
    return landed;
  }

  private async refresh(users: readonly number[]): Promise<void> {
    for (let start = 0; start < users.length; start += RANK_BATCH) {
      const batch = users.slice(start, start + RANK_BATCH);
      await Promise.all([this.authContexts.refreshUsers(batch), ...this.listeners.map((listener) => listener(batch))]);
    }
  }
}
