import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Job } from 'pg-boss';
import { AuditService } from '../platform/audit/audit.service.js';
import { isDeviceScoped, permissionIdOf } from '../platform/auth/permissions.js';
import { ROLES } from '../platform/auth/roles.js';
import { NOW, type ColumnValues } from '../platform/projections/resource-table.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { runInRequestContext } from '../platform/http/request-context.js';
import { JobQueue } from '../platform/jobs/job-queue.js';
import { AccessReviewItemsRepository } from './access-review-items.repository.js';
import { AccessReviewNotices, DUE_NOTICE_HOURS } from './access-review-notices.js';
import { AccessReviewsRepository } from './access-reviews.repository.js';

export const SNAPSHOT_QUEUE = 'access-review-snapshot';

/**
 * The roles a group may carry that give its members something in scope: any permission of the
 * scope's (every permission when it names none). None when the scope names devices: a role, like a
 * grant, holds everywhere and is not a device's item (part 6.16: no grants when devices are named).
 */
export function conferringRoles(codes: readonly string[] | undefined, devicesNamed: boolean): number[] {
  if (devicesNamed) return [];
  return ROLES.filter((role) => [...role.permissions].some((code) => codes === undefined || codes.includes(code))).map(
    (role) => role.id,
  );
}

/** What a campaign's jobs carry: the campaign, and the request that asked (for the audit trail). */
export interface ReviewJobData {
  readonly review_id: number;
  readonly request_id: string;
  readonly created_by: number | null;
}

/**
 * The snapshot job of a new campaign (part 6.16): one statement takes every item in scope, and
 * the campaign opens in the same transaction (`access_review.opened`), so a campaign is never
 * open with half its items; the reviewers are told after. A retry of a campaign already open (or
 * cancelled meanwhile) takes nothing again.
 */
@Injectable()
export class AccessReviewSnapshot implements OnModuleInit {
  private readonly logger = new Logger('AccessReviews');

  constructor(
    private readonly uow: UnitOfWork,
    private readonly queue: JobQueue,
    private readonly reviews: AccessReviewsRepository,
    private readonly items: AccessReviewItemsRepository,
    private readonly audit: AuditService,
    private readonly notices: AccessReviewNotices,
  ) {}

  onModuleInit(): void {
    this.queue.declare(SNAPSHOT_QUEUE, { retryLimit: 5, retryDelay: 5, retryBackoff: true, retryDelayMax: 60 });
    this.queue.register<ReviewJobData>(SNAPSHOT_QUEUE, (job) => this.run(job));
  }

  private async run(job: Job<ReviewJobData>): Promise<object> {
    const { review_id: id, request_id, created_by } = job.data;
    const started = Date.now();
    const items = await runInRequestContext({ request_id, ip: 'job', actor_id: created_by }, () => this.take(id));
    if (items === undefined) return { access_review_id: id, items: null };
    this.logger.log({ msg: 'access review opened', access_review_id: id, items, duration_ms: Date.now() - started });
    await this.notices.send(id).catch((error: unknown) => {
      // The every-minute notice job sends what is left.
      this.logger.warn({ msg: 'access review notices deferred', access_review_id: id, err: String(error) });
    });
    return { access_review_id: id, items };
  }

  /** Takes the items and opens the campaign; undefined when it is no longer preparing. */
  take(id: number): Promise<number | undefined> {
    return this.uow.run(async (tx) => {
      const review = await this.reviews.progress(tx, id);
      if (review?.state !== 'preparing') return undefined;
      const codes = review.scope.permission_codes;
      const permissionIds = codes?.map((code) => permissionIdOf(code) ?? 0) ?? null;
      const count = await this.items.snapshot(tx, id, {
        deviceIds: review.scope.device_ids ?? null,
        permissionIds,
        userIds: review.scope.user_ids ?? null,
        groupIds: review.scope.group_ids ?? null,
        roleIds: conferringRoles(codes, review.scope.device_ids !== undefined),
        owners: codes === undefined || codes.some((code) => isDeviceScoped(code)),
      });
      const dueSoon = review.due_at.getTime() <= Date.now() + DUE_NOTICE_HOURS * 3_600_000;
      const opened: ColumnValues<'state' | 'item_count' | 'opened_at' | 'due_notices_done' | 'updated_by'> = {
        state: 'open',
        item_count: count,
        opened_at: NOW,
        // Due within a day already: the opening notice says when, and is the only one.
        due_notices_done: dueSoon,
      };
      await this.reviews.patch(tx, id, opened);
      await this.audit.record(tx, 'access_review.opened', id, {
        changes: { state: ['preparing', 'open'], items: [0, count] },
      });
      return count;
    });
  }
}
