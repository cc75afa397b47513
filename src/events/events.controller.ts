import { Describe } from '../platform/http/openapi/describe.decorator.js';
import { Controller, Get, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import type { FeedResponse } from '../platform/http/responses.js';
import { EventDto, EventsQueryDto } from './events.dto.js';
import { EventsService } from './events.service.js';

/** `/v1/admin/events` (part 6.12): every change, in commit order, by cursor. */
@ApiTags('events')
@Controller('v1/admin/events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @Authorize({
    permission: 'events.read',
  })
  @Describe({
    summary: 'Events after a cursor, in commit order',
    description:
      'Store `meta.next_after` and pass it as `after` on the next call: every event is seen exactly once, in order, ' +
      'even with many writing instances. `wait` (seconds, at most 30) long-polls when nothing is new. Events are kept ' +
      '`EVENT_RETENTION_DAYS` (30) days: a cursor pointing before events retention has purged is 410 ' +
      '`EVENT_CURSOR_EXPIRED`, with `details.oldest_after` to resume from.',
    returns: EventDto,
    feed: true,
    errors: [400, 410],
  })
  list(@Query() query: EventsQueryDto, @Req() request: FastifyRequest): Promise<FeedResponse<EventDto>> {
    // A waiting call stops looking once its client has gone.
    return this.events.feed(query, () => request.raw.destroyed || request.raw.socket.destroyed);
  }
}
