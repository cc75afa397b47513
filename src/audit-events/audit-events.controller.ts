import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Controller, Get, Query } from '@nestjs/common';
import { AUDIT_EVENT_LIST } from './audit-events.repository.js';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { ListResponse, ResourceResponse } from '../platform/http/responses.js';
import { AuditEventsService } from './audit-events.service.js';
import { AuditEventDto } from './audit-event.dto.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/audit-events` (part 6.10). */
@ApiTags('audit events')
@Controller('v1/admin/audit-events')
export class AuditEventsController {
  constructor(private readonly events: AuditEventsService) {}

  @ListRoute({
    summary: 'List audit events, newest first',
    returns: AuditEventDto,
    spec: AUDIT_EVENT_LIST,
  })
  @Authorize({
    permission: 'audit.read',
  })
  @CachedRead({
    answerStored: true,
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<AuditEventDto>> {
    return this.events.list(query);
  }

  @Get(':id')
  @Authorize({
    permission: 'audit.read',
  })
  @Describe({
    summary: 'Get an audit event (cached)',
    returns: AuditEventDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('audit_event'),
    answerStored: true,
  })
  get(
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<AuditEventDto>> {
    return this.events.get(id, prefetched);
  }
}
