import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { AcceptedResponse, ListResponse, ResourceResponse } from '../platform/http/responses.js';
import { NoOptionsDto } from '../platform/http/validation.js';
import { AcceptedJobDto } from '../platform/jobs/jobs.dto.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';
import { AccessReviewClose } from './access-review-close.js';
import { AccessReviewDecisions } from './access-review-decisions.service.js';
import { ACCESS_REVIEW_ITEM_LIST } from './access-review-items.repository.js';
import { ACCESS_REVIEW_LIST } from './access-reviews.repository.js';
import { AccessReviewsService } from './access-reviews.service.js';
import {
  AccessReviewAcceptedDto,
  AccessReviewDto,
  AccessReviewItemDto,
  CreateAccessReviewDto,
  ReviewDecisionsDto,
  ReviewDecisionsResponseDto,
} from './dto/access-review.dto.js';

/** `/v1/admin/access-reviews` (part 6.16): certification campaigns. */
@ApiTags('access-reviews')
@Controller('v1/admin/access-reviews')
export class AccessReviewsController {
  constructor(
    private readonly reviews: AccessReviewsService,
    private readonly decisions: AccessReviewDecisions,
    private readonly closing: AccessReviewClose,
  ) {}

  @ListRoute({
    summary: 'List access reviews, newest first',
    returns: AccessReviewDto,
    spec: ACCESS_REVIEW_LIST,
  })
  @Authorize({
    permission: 'access_reviews.read',
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<AccessReviewDto>> {
    return this.reviews.list(query);
  }

  @Post()
  @Authorize({
    permission: 'access_reviews.manage',
  })
  @Describe({
    summary: 'Open a campaign: 202, and a job snapshots its items',
    description:
      'Items: every live authority permission and owner authority on the devices in scope, and every live permission grant unless the scope names `device_ids`. The campaign is `preparing` until the snapshot job opens it; `Location` is the campaign. A device, user or permission the scope names that does not exist is a 404.',
    returns: AccessReviewAcceptedDto,
    status: 202,
    errors: [400, 404],
  })
  create(@Body() dto: CreateAccessReviewDto): Promise<AcceptedResponse<AccessReviewAcceptedDto>> {
    return this.reviews.create(dto);
  }

  @Get(':id')
  @Authorize({
    permission: 'access_reviews.read',
  })
  @Describe({
    summary: 'Get an access review with its counts (cached)',
    returns: AccessReviewDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('access_review'),
  })
  get(
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<AccessReviewDto>> {
    return this.reviews.get(id, prefetched);
  }

  @ListRoute({
    path: ':id/items',
    summary: 'List a campaign’s items in id order (by device, then user)',
    description:
      'An actor not allowed `access_reviews.decide` by role or grant sees only the items on devices where it may decide. `recommendation` is `revoke` when the path was not used within the campaign’s `UNUSED_ACCESS_DAYS` (never used included).',
    returns: AccessReviewItemDto,
    spec: ACCESS_REVIEW_ITEM_LIST,
    errors: [404],
  })
  @Authorize({
    permission: 'access_reviews.read',
  })
  items(
    @Actor() actor: AuthContext,
    @IdParam() id: number,
    @Query() query: Record<string, unknown>,
  ): Promise<ListResponse<AccessReviewItemDto>> {
    return this.reviews.itemsOf(actor, id, query);
  }

  @Post(':id/decisions')
  @Authorize({
    permission: 'access_reviews.decide',
    check: 'service',
  })
  @Describe({
    summary: 'Decide up to 1000 items; per-item results in order',
    description:
      'Each item needs `access_reviews.decide` on its device (a permission grant’s item: by role or grant) and may not be the actor’s own (`SELF_ACTION_FORBIDDEN`); `revoke` on an owner’s authority fails with `ACCESS_REVIEW_ITEM_NOT_REVOCABLE`. Items fail one by one. Deciding again replaces the decision. A campaign that is not open is a 409.',
    returns: ReviewDecisionsResponseDto,
    errors: [400, 404, 409],
  })
  decide(@Write() { actor, id }: RecordWrite, @Body() dto: ReviewDecisionsDto): Promise<ReviewDecisionsResponseDto> {
    return this.decisions.decide(actor, id, dto);
  }

  @Post(':id/close')
  @Authorize({
    permission: 'access_reviews.manage',
  })
  @Describe({
    summary: 'Close an open campaign: 202, and a job applies its revocations',
    description:
      'The campaign is `closing` at once (decisions are refused from then on). The job revokes every `revoke` item, and every undecided one when `default_decision` is `revoke`, as a manual revoke does, with reason `access review {id}`; a path already revoked counts as revoked. Then the campaign is `closed` with its `result`.',
    returns: AcceptedJobDto,
    status: 202,
    errors: [400, 404, 409, 412],
  })
  close(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<AcceptedResponse<AcceptedJobDto>> {
    return this.closing.request(id, ifMatch);
  }

  @Post(':id/cancel')
  @Authorize({
    permission: 'access_reviews.manage',
  })
  @Describe({
    summary: 'Cancel a campaign that is preparing or open, with no effect',
    returns: AccessReviewDto,
    errors: [400, 404, 409, 412],
  })
  cancel(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<AccessReviewDto>> {
    return this.reviews.cancel(id, ifMatch);
  }
}
