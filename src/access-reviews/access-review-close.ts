import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Job } from 'pg-boss';
import { BulkAuthorityPermissionsService } from '../grants/bulk-authority-permissions.service.js';
import { PermissionGrantsService } from '../grants/permission-grants.service.js';
import { GroupMembersService } from '../groups/group-members.service.js';
import type { Holder } from '../access-model/holder.js';
import { AuditService } from '../platform/audit/audit.service.js';
import { AuthContextService } from '../access-model/auth-context.service.js';
import { rankRefusal } from './access-review-decisions.service.js';
import { updateStamp } from '../platform/audit/actor-stamps.js';
import { permissionCodeOf } from '../platform/auth/permissions.js';
import { roleById } from '../platform/auth/roles.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { ApiError } from '../platform/http/api-error.js';
import { currentRequest, runInRequestContext } from '../platform/http/request-context.js';
import { AcceptedResponse } from '../platform/http/responses.js';
import type { AcceptedJobDto } from '../platform/jobs/jobs.dto.js';
import { JobQueue } from '../platform/jobs/job-queue.js';
import { AccessReviewItemsRepository, type ItemFacts, type Outcome } from './access-review-items.repository.js';
import type { ReviewJobData } from './access-review-snapshot.js';
import { AccessReviewsRepository } from './access-reviews.repository.js';
import { reviewStateConflict } from './access-reviews.service.js';

export const CLOSE_QUEUE = 'access-review-close';
/** Items settled per transaction: each revocation writes its row, audit event and access events. */
const CHUNK = 500;

/** What one chunk of the close did. */
export type CloseStep = 'more' | 'closed' | 'not_closing';

/**
 * `POST /access-reviews/{id}/close` (part 6.16): the campaign turns `closing` at once (decisions
 * are refused from then on) and a job applies it. Chunk by chunk, each in one transaction, the
 * job revokes the `revoke` items (and the undecided ones when the default is `revoke`) through
 * the same writes as a manual revoke, with reason `access review {id}`, and records every item's
 * outcome with them: a path already revoked by hand counts as revoked, and a close interrupted
 * by a crash resumes at the first item without an outcome. The last step closes the campaign
 * with its result (`access_review.closed`).
 */
@Injectable()
export class AccessReviewClose implements OnModuleInit {
  private readonly logger = new Logger('AccessReviews');

  constructor(
    private readonly uow: UnitOfWork,
    private readonly queue: JobQueue,
    private readonly reviews: AccessReviewsRepository,
    private readonly items: AccessReviewItemsRepository,
    private readonly audit: AuditService,
    private readonly authorityPermissions: BulkAuthorityPermissionsService,
    private readonly grants: PermissionGrantsService,
    private readonly members: GroupMembersService,
    private readonly contexts: AuthContextService,
  ) {}

  onModuleInit(): void {
    // A crashed attempt is taken up again once pg-boss expires it; every step is idempotent.
    this.queue.declare(CLOSE_QUEUE, {
      retryLimit: 10,
      retryDelay: 5,
      retryBackoff: true,
      retryDelayMax: 300,
      expireInSeconds: 900,
    });
    this.queue.register<ReviewJobData>(CLOSE_QUEUE, (job) => this.run(job), { localConcurrency: 1 });
  }

  /**
   * 202 with the close job. An open campaign closes; a `closing` one whose job failed for good
   * (every retry spent) is closed again by a new job that resumes where the last stopped.
   */
  async request(id: number, ifMatch: IfMatch): Promise<AcceptedResponse<AcceptedJobDto>> {
    const jobId = await this.uow.run(async (tx) => {
      const before = await this.reviews.lock(tx, id);
      assertIfMatch(ifMatch, before.version);
      const resumable = before.state === 'closing' && (await this.jobFailed(tx, before.job_id));
      if (before.state !== 'open' && !resumable) throw reviewStateConflict(id, before.state, 'close');
      const job = await this.queue.enqueue(tx, CLOSE_QUEUE, {
        review_id: id,
        request_id: currentRequest()?.request_id ?? 'job',
      });
      await this.reviews.patch(tx, id, { state: 'closing', job_id: job, ...updateStamp(tx) });
      await this.audit.record(tx, 'access_review.close', id, {
        before,
        changes: { state: [before.state, 'closing'], job_id: [before.job_id, job] },
      });
      return job;
    });
    this.queue.wake(CLOSE_QUEUE);
    return new AcceptedResponse<AcceptedJobDto>({ job_id: jobId, state: 'queued' }, `/v1/admin/jobs/${jobId}`, 1);
  }

  /** Asked under the campaign's lock, through the transaction: never waits for the queue's own pool. */
  private async jobFailed(tx: Tx, jobId: string | null): Promise<boolean> {
    const job = jobId === null ? null : await this.queue.find(CLOSE_QUEUE, jobId, tx.db);
    return job === null || job.state === 'failed' || job.state === 'cancelled';
  }

  private async run(job: Job<ReviewJobData>): Promise<object> {
    const { review_id: id, request_id, created_by } = job.data;
    const started = Date.now();
    // The closer's role judges the default revokes: a job without one would refuse them all.
    if (created_by === null) throw new Error(`the close job of access review ${id} names no closer`);
    let step: CloseStep = 'more';
    while (step === 'more')
      step = await runInRequestContext({ request_id, ip: 'job', actor_id: created_by }, () =>
        this.step(id, created_by),
      );
    const result = (await this.reviews.read(id))?.value.result ?? null;
    this.logger.log({
      msg: 'access review closed',
      access_review_id: id,
      step,
      result,
      duration_ms: Date.now() - started,
    });
    return { access_review_id: id, ...(result ?? {}) };
  }

  /** One chunk of the close, in one transaction, by `closerId` (who asked for it); the last closes the campaign. */
  step(id: number, closerId: number): Promise<CloseStep> {
    return this.uow.run(
      async (tx) => {
        const review = await this.reviews.progress(tx, id);
        if (review === undefined) throw ApiError.notFound('ACCESS_REVIEW_NOT_FOUND', id);
        if (review.state !== 'closing') return 'not_closing';
        const chunk = await this.items.unsettled(tx, id, CHUNK);
        if (chunk.length === 0) {
          const counted = await this.items.outcomes(tx, id);
          await this.reviews.patch(tx, id, { state: 'closed', result: JSON.stringify(counted), closed_at: new Date() });
          await this.audit.record(tx, 'access_review.closed', id, {
            changes: { state: ['closing', 'closed'], result: [null, counted] },
          });
          return 'closed';
        }
        const revoking = chunk.filter(
          (item) => item.kind !== 'o' && (item.decision ?? review.default_decision) === 'revoke',
        );
        // Revoking a grant is a write on its user, judged by the rank rule of a manual revoke at
        // the write: an undecided grant revoked by the default against the closer's role, a
        // reviewer's revoke against the reviewer's role now (judged at the decision too, but either
        // role may have changed since: a user promoted above its reviewer keeps the grant).
        const closer = await this.contexts.subjectOf(closerId);
        const refused = new Set(
          revoking
            .filter((item) => item.kind === 'g' && item.user_id !== null)
            .filter((item) => {
              if (item.decision === null) return closer === undefined || rankRefusal(closer, item) !== undefined;
              const role = item.reviewer_role_id === null ? undefined : roleById(item.reviewer_role_id);
              return (
                item.reviewer_id === null ||
                role === undefined ||
                rankRefusal({ user_id: item.reviewer_id, role }, item) !== undefined
              );
            })
            .map((item) => item.id),
        );
        const reason = `access review ${id}`;
        await this.authorityPermissions.revokeReviewed(
          tx,
          revoking.filter((item) => item.kind === 'a').map((item) => reviewedPath(item)),
          reason,
        );
        await this.grants.revokeReviewed(
          tx,
          revoking.filter((item) => item.kind === 'g' && !refused.has(item.id)).map((item) => reviewedGrant(item)),
          reason,
        );
        await this.members.removeReviewed(
          tx,
          revoking.filter((item) => item.kind === 'm').map((item) => reviewedMembership(item)),
          reason,
        );
        // Revoked now, or no longer live (revoked by hand, expired): either way the path is gone.
        const outcomes = new Map<number, Outcome>(chunk.map((item) => [item.id, 'kept']));
        for (const item of revoking) outcomes.set(item.id, refused.has(item.id) ? 'failed' : 'revoked');
        await this.items.settle(tx, outcomes);
        return 'more';
      },
      { actor: closerId },
    );
  }
}

function codeOf(item: ItemFacts): string {
  const code = item.permission_id === null ? undefined : permissionCodeOf(item.permission_id);
  if (code === undefined) throw new Error(`access review item ${item.id} names no known permission`);
  return code;
}

/** The item's holder: its user, or the group holding the right. */
function holderOf(item: ItemFacts): Holder {
  return item.user_id === null ? { group_id: item.group_id ?? 0 } : { user_id: item.user_id };
}

function reviewedMembership(item: ItemFacts): { id: number; group_id: number; user_id: number } {
  return { id: item.path_id, group_id: item.group_id ?? 0, user_id: item.user_id ?? 0 };
}

function reviewedPath(item: ItemFacts): {
  id: number;
  authority_id: number;
  holder: Holder;
  device_id: number;
  permission_code: string;
} {
  return {
    id: item.path_id,
    authority_id: item.authority_id ?? 0,
    holder: holderOf(item),
    device_id: item.device_id ?? 0,
    permission_code: codeOf(item),
  };
}

function reviewedGrant(item: ItemFacts): {
  id: number;
  holder: Holder;
  permission_id: number;
  permission_code: string;
} {
  return {
    id: item.path_id,
    holder: holderOf(item),
    permission_id: item.permission_id ?? 0,
    permission_code: codeOf(item),
  };
}
