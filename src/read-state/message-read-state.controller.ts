import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { READ_STATE_LIST } from './read-state.repository.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IdParam } from '../platform/http/id.pipe.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { ReadCountsRepository } from './read-counts.repository.js';
import {
  ArchiveDto,
  MarkReadDto,
  PinDto,
  ReadCountsDto,
  ReadCountsQueryDto,
  ReadStateDto,
  SnoozeDto,
} from './read-state.dto.js';
import { ReadStateService } from './read-state.service.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/message-read-state` (part 6.8). */
@ApiTags('message read state')
@Controller('v1/admin/message-read-state')
export class MessageReadStateController {
  constructor(
    private readonly states: ReadStateService,
    private readonly counts: ReadCountsRepository,
  ) {}

  @ListRoute({
    summary: 'List read state',
    description: 'Rows of deleted messages are hidden.',
    returns: ReadStateDto,
    spec: READ_STATE_LIST,
  })
  @Authorize({
    permission: 'read_state.read',
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<ReadStateDto>> {
    return this.states.list(query);
  }

  @Get('counts')
  @Authorize({
    permission: 'read_state.read',
  })
  @Describe({
    summary: 'Counts of a user’s messages (cached; never stale after a write)',
    returns: ReadCountsDto,
    errors: [400],
  })
  async countsOf(@Query() query: ReadCountsQueryDto): Promise<ResourceResponse<ReadCountsDto>> {
    const { counts, cache } = await this.counts.counts(Number(query.user_id), query.conversation_id ?? null);
    return new ResourceResponse(counts, { cache });
  }

  @Get(':id')
  @Authorize({
    permission: 'read_state.read',
  })
  @Describe({
    summary: 'Get a read state (cached)',
    returns: ReadStateDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('message_read_state'),
  })
  get(
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<ReadStateDto>> {
    return this.states.get(id, prefetched);
  }

  @Post(':id/mark-read')
  @Authorize({
    permission: 'read_state.update',
  })
  @Describe({
    summary: 'Mark read (`read: false` marks unread)',
    returns: ReadStateDto,
    errors: [400, 404, 412],
  })
  markRead(@Write() { id, ifMatch }: RecordWrite, @Body() dto: MarkReadDto): Promise<ResourceResponse<ReadStateDto>> {
    return this.states.setFlag(id, 'read', dto.read ?? true, ifMatch);
  }

  @Post(':id/archive')
  @Authorize({
    permission: 'read_state.update',
  })
  @Describe({
    summary: 'Archive (`archived: false` un-archives)',
    returns: ReadStateDto,
    errors: [400, 404, 412],
  })
  archive(@Write() { id, ifMatch }: RecordWrite, @Body() dto: ArchiveDto): Promise<ResourceResponse<ReadStateDto>> {
    return this.states.setFlag(id, 'archived', dto.archived ?? true, ifMatch);
  }

  @Post(':id/pin')
  @Authorize({
    permission: 'read_state.update',
  })
  @Describe({
    summary: 'Pin (`pinned: false` unpins)',
    returns: ReadStateDto,
    errors: [400, 404, 412],
  })
  pin(@Write() { id, ifMatch }: RecordWrite, @Body() dto: PinDto): Promise<ResourceResponse<ReadStateDto>> {
    return this.states.setFlag(id, 'pinned', dto.pinned ?? true, ifMatch);
  }

  @Post(':id/snooze')
  @Authorize({
    permission: 'read_state.update',
  })
  @Describe({
    summary: 'Snooze until a time (at most 365 days ahead) or unsnooze with null',
    returns: ReadStateDto,
    errors: [400, 404, 412, 422],
  })
  snooze(@Write() { id, ifMatch }: RecordWrite, @Body() dto: SnoozeDto): Promise<ResourceResponse<ReadStateDto>> {
    return this.states.snooze(id, dto.until, ifMatch);
  }
}
