import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { DryRun } from '../access-model/dry-run.decorator.js';
import { writeOrPreview, type PreviewAnswer } from '../platform/database/write-or-preview.js';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { deviceOf } from '../platform/auth/device-locators.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';
import { AccessRequestDecisions } from './access-request-decisions.service.js';
import { ACCESS_REQUEST_LIST } from './access-requests.repository.js';
import { AccessRequestsService } from './access-requests.service.js';
import { ACCESS_REQUEST } from './device-locators.js';
import {
  AccessRequestDto,
  ApproveAccessRequestDto,
  CancelAccessRequestDto,
  CreateAccessRequestDto,
  DenyAccessRequestDto,
} from './dto/access-request.dto.js';

const VISIBILITY =
  'An actor not allowed `access_requests.approve` by role or grant sees only its own requests and those it may decide.';

/** `/v1/admin/access-requests` (part 6.15). */
@ApiTags('access requests')
@Controller('v1/admin/access-requests')
export class AccessRequestsController {
  constructor(
    private readonly requests: AccessRequestsService,
    private readonly decisions: AccessRequestDecisions,
  ) {}

  @ListRoute({
    summary: 'List access requests, newest first',
    description: VISIBILITY,
    returns: AccessRequestDto,
    spec: ACCESS_REQUEST_LIST,
  })
  @Authorize({
    permission: 'access_requests.read',
  })
  list(@Actor() actor: AuthContext, @Query() query: Record<string, unknown>): Promise<ListResponse<AccessRequestDto>> {
    return this.requests.list(actor, query);
  }

  @Get(':id')
  @Authorize({
    permission: 'access_requests.read',
  })
  @Describe({
    summary: 'Get an access request (cached)',
    description: `${VISIBILITY} Any other is a 404.`,
    returns: AccessRequestDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('access_request'),
  })
  get(
    @Actor() actor: AuthContext,
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<AccessRequestDto>> {
    return this.requests.get(actor, id, prefetched);
  }

  @Post()
  @Authorize({
    permission: 'access_requests.create',
  })
  @Describe({
    summary: 'Ask for a device-scoped permission on a device, for a while',
    description:
      'The requester must hold a live authority on the device and not already be allowed the permission there (422 `ACCESS_REQUEST_INVALID`). One pending request per requester, device and permission (409). The approvers are told through their inbox.',
    returns: AccessRequestDto,
    status: 201,
    errors: [400, 404, 409, 422],
  })
  create(
    @Actor() actor: AuthContext,
    @Body() dto: CreateAccessRequestDto,
  ): Promise<ResourceResponse<AccessRequestDto>> {
    return this.requests.create(actor, dto);
  }

  @Post(':id/approve')
  @Authorize({
    permission: 'access_requests.approve',
    device: deviceOf(ACCESS_REQUEST),
  })
  @Describe({
    summary: 'Approve: grant the permission on the requester’s authority until now + duration',
    description:
      'The approver must itself be allowed the requested permission on the device (403 `DELEGATION_FORBIDDEN`) and not be the requester (422). `duration_seconds` may only shorten the duration asked for (longer is a 400). When the requester has meanwhile become allowed, lost its authority or stopped being active: 422 `ACCESS_REQUEST_INVALID`, and the request stays pending.',
    returns: AccessRequestDto,
    errors: [400, 404, 409, 412, 422],
    preview: true,
  })
  approve(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() dto: ApproveAccessRequestDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<AccessRequestDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.decisions.approve(actor, id, dto, ifMatch));
  }

  @Post(':id/deny')
  @Authorize({
    permission: 'access_requests.approve',
    device: deviceOf(ACCESS_REQUEST),
  })
  @Describe({
    summary: 'Deny a pending access request',
    description: 'Who may approve may deny (the same rules, 403 and 422 included).',
    returns: AccessRequestDto,
    errors: [400, 404, 409, 412, 422],
  })
  deny(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() dto: DenyAccessRequestDto,
  ): Promise<ResourceResponse<AccessRequestDto>> {
    return this.decisions.deny(actor, id, dto, ifMatch);
  }

  @Post(':id/cancel')
  @Authorize({
    permission: 'access_requests.create',
  })
  @Describe({
    summary: 'Cancel one’s own pending access request',
    description:
      'The requester only: anyone else who may see the request gets 403 `PERMISSION_DENIED`, anyone who may not 404.',
    returns: AccessRequestDto,
    errors: [400, 404, 409, 412],
  })
  cancel(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() dto: CancelAccessRequestDto,
  ): Promise<ResourceResponse<AccessRequestDto>> {
    return this.decisions.cancel(actor, id, dto, ifMatch);
  }
}
