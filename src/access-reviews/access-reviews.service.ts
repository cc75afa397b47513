import { Inject, Injectable } from '@nestjs/common';
import { creationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService } from '../platform/audit/audit.service.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { AuthorizationService } from '../access-model/authorization.service.js';
import { permissionIdOf } from '../platform/auth/permissions.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { ApiError } from '../platform/http/api-error.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { parseListQuery } from '../platform/http/list/list-query.parser.js';
import { currentRequest } from '../platform/http/request-context.js';
import { AcceptedResponse, ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { futureTimestamp } from '../platform/http/timestamps.js';
import type { Prefetched } from '../platform/projections/prefetched.js';
import { respondWith } from '../platform/projections/resource-table.js';
import { ACCESS_REVIEW_ITEM_LIST, AccessReviewItemsRepository } from './access-review-items.repository.js';
import { AccessReviewsRepository } from './access-reviews.repository.js';
import { SNAPSHOT_QUEUE } from './access-review-snapshot.js';
import type {
  AccessReviewAcceptedDto,
  AccessReviewDto,
  AccessReviewItemDto,
  CreateAccessReviewDto,
} from './dto/access-review.dto.js';
import { JobQueue } from '../platform/jobs/job-queue.js';

const DECIDE = 'access_reviews.decide';

/** A write the campaign's state does not allow: 409 naming the state and the action. */
export function reviewStateConflict(id: number, from: string, action: 'close' | 'cancel' | 'decide'): ApiError {
  const what = { close: 'be closed', cancel: 'be cancelled', decide: 'take decisions' }[action];
  return new ApiError('INVALID_STATE_TRANSITION', `Access review ${id} is ${from}: it cannot ${what}`, {
    from,
    action,
  });
}

/** Campaigns of access reviews (part 6.16): creation, reads, items and cancel. */
@Injectable()
export class AccessReviewsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly reviews: AccessReviewsRepository,
    private readonly items: AccessReviewItemsRepository,
    private readonly audit: AuditService,
    private readonly queue: JobQueue,
    private readonly authorization: AuthorizationService,
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'unusedAccessDays'>,
  ) {}

  list(query: Record<string, unknown>): Promise<ListResponse<AccessReviewDto>> {
    return this.reviews.list(query);
  }

  get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<AccessReviewDto>> {
    return this.reviews.detail(id, false, prefetched);
  }

  /**
   * A campaign's items. An actor not allowed `access_reviews.decide` by role or grant sees those
   * on the devices where it may decide (and no grants).
   */
  async itemsOf(
    actor: AuthContext,
    id: number,
    query: Record<string, unknown>,
  ): Promise<ListResponse<AccessReviewItemDto>> {
    parseListQuery(ACCESS_REVIEW_ITEM_LIST, query); // a bad query is a 400 before the campaign's 404
    if ((await this.reviews.read(id)) === undefined) throw ApiError.notFound('ACCESS_REVIEW_NOT_FOUND', id);
    const devices = await this.authorization.devicesAllowed(actor, DECIDE);
    return this.items.list(id, query, devices === 'all' ? undefined : [...devices]);
  }

  /** 202: the campaign exists as `preparing`, and its snapshot job is queued with it. */
  async create(dto: CreateAccessReviewDto): Promise<AcceptedResponse<AccessReviewAcceptedDto>> {
    futureTimestamp(dto.due_at, 'due_at');
    const scope = dto.scope ?? {};
    for (const code of scope.permission_codes ?? [])
      if (permissionIdOf(code) === undefined)
        throw new ApiError('PERMISSION_NOT_FOUND', `Permission ${code} does not exist`, { permission_code: code });
    const device = await this.reviews.firstMissing('device', scope.device_ids ?? []);
    if (device !== undefined) throw ApiError.notFound('DEVICE_NOT_FOUND', device);
    const user = await this.reviews.firstMissing('user', scope.user_ids ?? []);
    if (user !== undefined) throw ApiError.notFound('USER_NOT_FOUND', user);
    const group = await this.reviews.firstMissing('group', scope.group_ids ?? []);
    if (group !== undefined) throw ApiError.notFound('GROUP_NOT_FOUND', group);
    const stored = {
      ...(scope.device_ids === undefined ? {} : { device_ids: [...new Set(scope.device_ids)].sort((a, b) => a - b) }),
      ...(scope.permission_codes === undefined
        ? {}
        : { permission_codes: [...new Set(scope.permission_codes)].sort() }),
      ...(scope.user_ids === undefined ? {} : { user_ids: [...new Set(scope.user_ids)].sort((a, b) => a - b) }),
      ...(scope.group_ids === undefined ? {} : { group_ids: [...new Set(scope.group_ids)].sort((a, b) => a - b) }),
    };
    const accepted = await this.uow.run(async (tx) => {
      const created = await this.reviews.insert(tx, {
        name: dto.name,
        scope: JSON.stringify(stored),
        default_decision: dto.default_decision,
        due_at: new Date(dto.due_at),
        unused_days: this.settings.unusedAccessDays,
        ...creationStamp(tx),
      });
      if (created === undefined) throw new Error('access review insert returned no row');
      const jobId = await this.queue.enqueue(tx, SNAPSHOT_QUEUE, {
        review_id: created.id,
        request_id: currentRequest()?.request_id ?? 'job',
      });
      const row = await this.reviews.patch(tx, created.id, { job_id: jobId });
      await this.audit.record(tx, 'access_review.create', created.id, {
        changes: {
          name: [null, row.name],
          scope: [null, row.scope],
          default_decision: [null, row.default_decision],
          due_at: [null, row.due_at],
          job_id: [null, jobId],
        },
      });
      return { id: row.id, job_id: jobId };
    });
    this.queue.wake(SNAPSHOT_QUEUE);
    return new AcceptedResponse<AccessReviewAcceptedDto>(
      { id: accepted.id, job_id: accepted.job_id, state: 'preparing' },
      `/v1/admin/access-reviews/${accepted.id}`,
      1,
    );
  }

  /** Ends a campaign that is preparing or open with no effect on anyone's access. */
  async cancel(id: number, ifMatch: IfMatch): Promise<ResourceResponse<AccessReviewDto>> {
    const row = await this.uow.run(async (tx) => {
      const before = await this.reviews.lock(tx, id);
      assertIfMatch(ifMatch, before.version);
      if (before.state !== 'open' && before.state !== 'preparing')
        throw reviewStateConflict(id, before.state, 'cancel');
      const after = await this.reviews.patch(tx, id, { state: 'cancelled', closed_at: new Date(), ...updateStamp(tx) });
      await this.audit.record(tx, 'access_review.cancelled', id, {
        before,
        changes: { state: [before.state, 'cancelled'] },
      });
      return after;
    });
    return respondWith(row);
  }
}
