import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Delete, Get, Patch, Post, Query } from '@nestjs/common';
import { MESSAGE_LIST } from './messages.repository.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { ApiIncludeDeleted, IncludeDeleted } from '../platform/http/include-deleted.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { AcceptedResponse, ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { NoOptionsDto } from '../platform/http/validation.js';
import { BulkJobs } from '../platform/jobs/bulk-jobs.service.js';
import { BulkJobRoute, PrefersAsync } from '../platform/jobs/bulk-job-route.decorator.js';
import { AcceptedJobDto } from '../platform/jobs/jobs.dto.js';
import { BulkDeleteService } from './bulk-delete.service.js';
import {
  BulkDeleteDto,
  BulkDeleteResponseDto,
  CreateMessageDto,
  InboxMessageDto,
  SendPushDto,
  UpdateMessageDto,
} from './inbox.dto.js';
import { MessagesService } from './messages.service.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/inbox` (part 6.7). */
@ApiTags('inbox')
@Controller('v1/admin/inbox')
export class InboxController {
  constructor(
    private readonly messages: MessagesService,
    private readonly bulk: BulkDeleteService,
    private readonly jobs: BulkJobs,
  ) {}

  @ListRoute({
    summary: 'List inbox messages (newest first)',
    returns: InboxMessageDto,
    spec: MESSAGE_LIST,
  })
  @Authorize({
    permission: 'inbox.read',
  })
  @CachedRead({
    answerStored: true,
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<InboxMessageDto>> {
    return this.messages.list(query);
  }

  @Get(':id')
  @Authorize({
    permission: 'inbox.read',
  })
  @Describe({
    summary: 'Get a message (cached)',
    returns: InboxMessageDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('inbox_message'),
    answerStored: true,
  })
  @ApiIncludeDeleted()
  get(
    @IdParam() id: number,
    @IncludeDeleted() includeDeleted: boolean,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<InboxMessageDto>> {
    return this.messages.get(id, includeDeleted, prefetched);
  }

  @Post()
  @Authorize({
    permission: 'inbox.create',
  })
  @Describe({
    summary: 'Send a message to a user’s inbox (creates its read state)',
    returns: InboxMessageDto,
    status: 201,
    errors: [400, 404],
  })
  create(@Body() dto: CreateMessageDto): Promise<ResourceResponse<InboxMessageDto>> {
    return this.messages.create(dto);
  }

  @Post('bulk-delete')
  @Authorize({
    permission: 'inbox.delete',
  })
  @Describe({
    summary: 'Soft-delete up to 1000 messages (100 000 as a job); per-item results in order',
    returns: BulkDeleteResponseDto,
    errors: [400],
  })
  @BulkJobRoute()
  bulkDelete(
    @Actor() actor: AuthContext,
    @Body() dto: BulkDeleteDto,
    @PrefersAsync() async: boolean,
  ): Promise<BulkDeleteResponseDto | AcceptedResponse<AcceptedJobDto>> {
    return this.jobs.answer('inbox.delete', actor, dto, async, () => this.bulk.run(dto));
  }

  @Patch(':id')
  @Authorize({
    permission: 'inbox.update',
  })
  @Describe({
    summary: 'Change a message’s title, body or data',
    returns: InboxMessageDto,
    errors: [400, 404, 412],
  })
  update(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() dto: UpdateMessageDto,
  ): Promise<ResourceResponse<InboxMessageDto>> {
    return this.messages.update(id, dto, ifMatch);
  }

  @Delete(':id')
  @Authorize({
    permission: 'inbox.delete',
  })
  @Describe({
    summary: 'Soft-delete a message (204 if already deleted)',
    returns: InboxMessageDto,
    noContent: 'Already deleted (or revoked): nothing changed',
    errors: [400, 404, 412],
  })
  remove(@Write() { id, ifMatch }: RecordWrite): Promise<ResourceResponse<InboxMessageDto> | NoContent> {
    return this.messages.remove(id, ifMatch);
  }

  @Post(':id/restore')
  @Authorize({
    permission: 'inbox.restore',
  })
  @Describe({
    summary: 'Restore a deleted message (204 if it is not deleted)',
    returns: InboxMessageDto,
    noContent: 'Not deleted: nothing changed',
    errors: [400, 404, 412],
  })
  restore(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<InboxMessageDto> | NoContent> {
    return this.messages.restore(id, ifMatch);
  }

  @Post(':id/send-push')
  @Authorize({
    permission: 'inbox.send_push',
  })
  @Describe({
    summary: 'Push the message to the recipient’s active devices (202 with a job)',
    description: 'Poll `Location` (`/v1/admin/jobs/{job_id}`) for the result.',
    returns: AcceptedJobDto,
    status: 202,
    errors: [400, 404, 412],
  })
  sendPush(@Write() { id, ifMatch }: RecordWrite, @Body() dto: SendPushDto): Promise<AcceptedResponse<AcceptedJobDto>> {
    return this.messages.sendPush(id, dto, ifMatch);
  }
}
