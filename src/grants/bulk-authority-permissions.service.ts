import type { Holder } from '../access-model/holder.js';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AccessWatch } from '../access-model/access-watch.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import { GroupFactsRepository } from '../access-model/group-facts.repository.js';
import { NOT_REVOKED, AuditService, type AuditAction, type AuditRecord } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { AuthorizationService, type DeviceQuestion } from '../access-model/authorization.service.js';
import type { PermissionCode } from '../platform/auth/permissions.js';
import { writeOrRollBack } from '../platform/database/write-or-preview.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { BulkJobs } from '../platform/jobs/bulk-jobs.service.js';
import type { ApiError } from '../platform/http/api-error.js';
import { AuthorityPermissionsRepository, type Resolved } from './authority-permissions.repository.js';
import type { BulkAuthorityPermissionsDto, BulkResponseDto, BulkResultDto } from './dto/authority-permission.dto.js';

type Mode = 'grant' | 'revoke';

/** An authority permission an access review revokes, with its holder. */
export interface ReviewedPath {
  readonly id: number;
  readonly authority_id: number;
  /** The authority's holder: a user, or a group (then every user it reaches). */
  readonly holder: Holder;
  readonly device_id: number;
  readonly permission_code: string;
}

function failure(code: string, message: string): BulkResultDto['error'] {
  return { code, message };
}

/**
 * A preview's results without the ids of the rows only the preview inserted (rolled back, never to
 * exist): a grant it would make names no row yet, as the write's answer is not known before it.
 * Rows that existed before (an `already_granted` pair, a revoked row) keep their ids.
 */
function previewed(results: readonly BulkResultDto[]): BulkResultDto[] {
  const made = new Set(results.filter((result) => result.status === 'granted').map((r) => r.authority_permission_id));
  return results.map((result) =>
    result.authority_permission_id !== null && made.has(result.authority_permission_id)
      ? { ...result, authority_permission_id: null }
      : result,
  );
}

/**
 * `bulk-grant` and `bulk-revoke` (part 6.6): a handful of set-based statements for the whole
 * batch (resolve, check, write, audit), never a round trip per item. Items fail one by one;
 * the others go through. `dry_run` runs the same statements and rolls back.
 */
@Injectable()
export class BulkAuthorityPermissionsService implements OnModuleInit {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly rows: AuthorityPermissionsRepository,
    private readonly audit: AuditService,
    private readonly authorization: AuthorizationService,
    private readonly jobs: BulkJobs,
    private readonly access: AccessWatch,
    private readonly groupAccess: GroupAccess,
    private readonly groupFacts: GroupFactsRepository,
  ) {}

  onModuleInit(): void {
    for (const mode of ['grant', 'revoke'] as const)
      this.jobs.register(
        `authority_permissions.${mode}`,
        'per-item',
        (tx, actor, items, options) =>
          this.runIn(tx, actor, mode, { ...options, items: items as BulkAuthorityPermissionsDto['items'] }),
        (results) => previewed(results as BulkResultDto[]),
      );
  }

  /** `dry_run` runs the very same statements in a transaction that rolls back (a preview). */
  async run(actor: AuthContext, mode: Mode, dto: BulkAuthorityPermissionsDto): Promise<BulkResponseDto> {
    const answer = await writeOrRollBack(dto.dry_run === true, () =>
      this.uow.run((tx) => this.runIn(tx, actor, mode, dto)),
    );
    return dto.dry_run === true ? { ...answer, results: previewed(answer.results) } : answer;
  }

  /**
   * One bulk (at most 1000 items) inside the caller's transaction: a request's, or a job chunk's;
   * a preview's transaction rolls back at its end.
   */
  async runIn(
    tx: Tx,
    actor: AuthContext,
    mode: Mode,
    dto: Omit<BulkAuthorityPermissionsDto, 'dry_run'>,
  ): Promise<BulkResponseDto> {
    await this.rows.lockAuthorities(
      tx,
      dto.items.map((item) => item.authority_id),
    );
    const resolved = await this.rows.resolve(tx, [
      dto.items.map((item) => item.authority_id),
      dto.items.map((item) => item.permission_id),
    ]);
    const permission: PermissionCode =
      mode === 'grant' ? 'authority_permissions.grant' : 'authority_permissions.revoke';
    const allowed = await this.allowedPerItem(actor, mode, permission, resolved);
    // The groups whose authorities reach the actor: granting on them is granting to oneself.
    const actorInGroup = new Set(
      mode === 'grant' ? (await this.groupFacts.groupsOf(tx.db, actor.user_id)).map((group) => group.group_id) : [],
    );
    // A group's authority is held by every user the group reaches: the rank rule over each, per group.
    const outranked = mode === 'grant' ? await this.rankProblems(tx, actor, resolved) : new Map<number, ApiError>();
    const results = dto.items.map((item, index): BulkResultDto => {
      const row = resolved[index];
      const base = {
        index,
        authority_id: item.authority_id,
        permission_id: item.permission_id,
        authority_permission_id: null,
        error: null,
      };
      if (row === undefined || row.device_id === null || row.authority_deleted === true)
        return {
          ...base,
          status: 'failed',
          error: failure('AUTHORITY_NOT_FOUND', `Authority ${item.authority_id} does not exist`),
        };
      if (row.code === null)
        return {
          ...base,
          status: 'failed',
          error: failure('PERMISSION_NOT_FOUND', `Permission ${item.permission_id} does not exist`),
        };
      if (row.device_scoped !== true)
        return {
          ...base,
          status: 'failed',
          error: failure('PERMISSION_NOT_DEVICE_SCOPED', `${row.code} is not a device-scoped permission`),
        };
      const verdict = allowed[index];
      if (verdict?.route !== true)
        return {
          ...base,
          status: 'failed',
          error: failure('PERMISSION_DENIED', `Missing the permission ${permission} on device ${row.device_id}`),
        };
      if (mode === 'grant') {
        if (row.authority_user_id === actor.user_id || actorInGroup.has(Number(row.authority_group_id)))
          return {
            ...base,
            status: 'failed',
            error: failure(
              'SELF_ACTION_FORBIDDEN',
              'You cannot grant an authority permission to an authority of your own',
            ),
          };
        const rank = row.authority_group_id === null ? undefined : outranked.get(Number(row.authority_group_id));
        if (rank !== undefined) return { ...base, status: 'failed', error: failure(rank.code, rank.message) };
        if (verdict.delegation !== true)
          return {
            ...base,
            status: 'failed',
            error: failure(
              'DELEGATION_FORBIDDEN',
              `You cannot hand on ${row.code} on device ${row.device_id}: you do not hold it yourself`,
            ),
          };
        return {
          ...base,
          status: row.active_id === null ? 'granted' : 'already_granted',
          authority_permission_id: row.active_id,
        };
      }
      return {
        ...base,
        status: row.active_id === null ? 'not_granted' : 'revoked',
        authority_permission_id: row.active_id,
      };
    });
    const writing = resolved.filter((row, index) => {
      const status = results[index]?.status;
      return status === 'granted' || status === 'revoked';
    });
    // Only the items' permissions can change, and only on their devices.
    await this.access.watch(tx, {
      users: [
        ...writing.flatMap((row) => (row.authority_user_id === null ? [] : [Number(row.authority_user_id)])),
        ...(await this.groupAccess.reached(
          tx,
          writing.flatMap((row) => (row.authority_group_id === null ? [] : [Number(row.authority_group_id)])),
        )),
      ],
      devices: writing.map((row) => Number(row.device_id)),
      permissions: [...new Set(writing.flatMap((row) => (row.code === null ? [] : [row.code])))],
    });
    const ends = new Map(results.map((result, index) => [result, allowed[index]?.until ?? null]));
    await (mode === 'grant' ? this.grant(tx, results, dto.reason, ends) : this.revoke(tx, results, dto.reason));
    const failed = results.filter((result) => result.status === 'failed').length;
    return { accepted: results.length, processed: results.length - failed, failed, results };
  }

  /**
   * An access review's close (part 6.16): revokes the rows among `paths` that are still live, as
   * a bulk revoke writes them (the holders' access watched, one UPDATE, an audit event per row
   * with `reason`). The review's decisions authorized them, so no route permission is checked
   * here. Answers the ids it revoked; the others had already stopped allowing.
   */
  async revokeReviewed(tx: Tx, paths: readonly ReviewedPath[], reason: string): Promise<Set<number>> {
    if (paths.length === 0) return new Set();
    await this.rows.lockAuthorities(
      tx,
      paths.map((path) => path.authority_id),
    );
    const groups = paths.flatMap((path) => (path.holder.group_id === undefined ? [] : [path.holder.group_id]));
    await this.access.watch(tx, {
      users: [
        ...paths.flatMap((path) => (path.holder.user_id === undefined ? [] : [path.holder.user_id])),
        ...(await this.groupAccess.reached(tx, groups)),
      ],
      devices: paths.map((path) => path.device_id),
      permissions: [...new Set(paths.map((path) => path.permission_code))],
    });
    const done = await this.rows.revokeMany(
      tx,
      paths.map((path) => path.id),
      tx.actor,
    );
    await this.recordChanged(tx, done, 'authority_permission.revoke', reason);
    return new Set(done);
  }

  /** For each group whose authority an item names: the rank rule's refusal over the users it reaches, if any. */
  private async rankProblems(
    tx: Tx,
    actor: AuthContext,
    resolved: readonly Resolved[],
  ): Promise<Map<number, ApiError>> {
    const groups = [
      ...new Set(resolved.flatMap((row) => (row.authority_group_id === null ? [] : [Number(row.authority_group_id)]))),
    ];
    const problems = new Map<number, ApiError>();
    if (groups.length === 0) return problems;
    const reached = await Promise.all(groups.map((group) => this.groupAccess.reached(tx, [group])));
    const judged = await this.groupAccess.judge(tx, actor, { roles: [], permissions: [] }, reached);
    groups.forEach((group, index) => {
      const problem = judged[index];
      // The self rule is the item's own check (its message names the authority); rank is judged here.
      if (problem !== undefined && problem.code !== 'SELF_ACTION_FORBIDDEN') problems.set(group, problem);
    });
    return problems;
  }

  /**
   * Per item: may the actor use the route on the item's device, and (grant only) does it hold
   * the permission it hands on there (delegation)? Both from one evaluator call, one query.
   */
  private async allowedPerItem(
    actor: AuthContext,
    mode: Mode,
    permission: PermissionCode,
    resolved: readonly Resolved[],
  ): Promise<{ route: boolean; delegation: boolean; until: Date | null }[]> {
    const questions: DeviceQuestion[] = resolved.flatMap((row) =>
      row.device_id === null
        ? []
        : [
            { permission, device_id: row.device_id },
            ...(mode === 'grant' && row.code !== null ? [{ permission: row.code, device_id: row.device_id }] : []),
          ],
    );
    const answers = await this.authorization.decideMany(actor, questions, true);
    // What is handed on lasts no longer than the actor's own way to it (part 5): each grant's end.
    const handedOn = resolved.flatMap((row) =>
      mode === 'grant' && row.device_id !== null && row.code !== null
        ? [{ permission: row.code, device_id: row.device_id }]
        : [],
    );
    const limits = handedOn.length === 0 ? [] : await this.authorization.delegationLimits(actor, handedOn);
    let next = 0;
    let nextLimit = 0;
    return resolved.map((row) => {
      if (row.device_id === null) return { route: false, delegation: false, until: null };
      const route = answers[next++] === true;
      const delegation = mode === 'grant' && row.code !== null ? answers[next++] === true : false;
      const until = mode === 'grant' && row.code !== null ? (limits[nextLimit++] ?? null) : null;
      return { route, delegation, until };
    });
  }

  /** One INSERT for every item to grant; a pair repeated in the batch is granted once. */
  private async grant(
    tx: Tx,
    results: BulkResultDto[],
    reason: string | undefined,
    ends: ReadonlyMap<BulkResultDto, Date | null>,
  ): Promise<void> {
    const pending = results.filter((result) => result.status === 'granted');
    if (pending.length === 0) return;
    const inserted = await this.rows.insertMany(
      tx,
      pending.map((result) => ({ ...result, expires_at: ends.get(result) ?? null })),
      tx.actor,
    );
    const idOf = new Map(inserted.map((row) => [`${row.authority_id}:${row.permission_id}`, row.id]));
    const claimed = new Set<string>();
    for (const result of pending) {
      const key = `${result.authority_id}:${result.permission_id}`;
      const id = idOf.get(key);
      // Repeated in the batch, or granted concurrently since we resolved: already granted.
      if (id === undefined || claimed.has(key)) {
        result.status = 'already_granted';
        result.authority_permission_id =
          id ?? (await this.rows.activeId(tx, result.authority_id, result.permission_id));
      } else {
        claimed.add(key);
        result.authority_permission_id = id;
      }
    }
    await this.recordChanged(tx, [...idOf.values()], 'authority_permission.grant', reason);
  }

  /** One UPDATE for every item to revoke. */
  private async revoke(tx: Tx, results: BulkResultDto[], reason: string | undefined): Promise<void> {
    const pending = results.filter((result) => result.status === 'revoked');
    if (pending.length === 0) return;
    const ids = pending.flatMap((result) =>
      result.authority_permission_id === null ? [] : [result.authority_permission_id],
    );
    const done = new Set(await this.rows.revokeMany(tx, [...new Set(ids)], tx.actor));
    const claimed = new Set<number>();
    for (const result of pending) {
      const id = result.authority_permission_id ?? 0;
      if (!done.has(id) || claimed.has(id)) result.status = 'not_granted';
      claimed.add(id);
    }
    await this.recordChanged(tx, [...done], 'authority_permission.revoke', reason);
  }

  private async recordChanged(
    tx: Tx,
    ids: readonly number[],
    action: AuditAction,
    reason: string | undefined,
  ): Promise<void> {
    const rows = await this.rows.findMany(tx, ids);
    // First, so the feed's events show each row as it now reads.
    await this.rows.changedInBulk(tx, rows);
    await this.audit.recordMany(
      tx,
      rows.map((row): AuditRecord => ({
        action,
        resource_id: row.id,
        reason: reason ?? null,
        ...(action.endsWith('.grant') ? {} : { before: NOT_REVOKED }),
        changes: action.endsWith('.grant')
          ? { authority_id: [null, row.authority_id], permission_code: [null, row.permission_code] }
          : { revoked_at: [null, row.revoked_at] },
      })),
    );
  }
}
