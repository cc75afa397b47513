import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../auth/authorize.decorator.js';
import { IdParam } from '../common/id.pipe.js';
import type { ListResponse, ResourceResponse } from '../common/responses.js';
import { AuditEventsService } from './audit-events.service.js';
import { AuditEventDto } from './dto/audit-event.dto.js';

/** `/v1/admin/audit-events` (part 6.10). */
@ApiTags('audit events')
@Controller('v1/admin/audit-events')
export class AuditEventsController {
  constructor(private readonly events: AuditEventsService) {}

  @Get()
  @Authorize({
    permission: 'audit.read',
    summary: 'List audit events, newest first',
    description:
      'Filters `actor_id`, `action`, `resource_type`, `resource_id`, `request_id`, `occurred_after`, `occurred_before` (ISO-8601 timestamps, exclusive); sort `id`, `occurred_at`; default `occurred_at:desc`.',
    returns: AuditEventDto,
    list: true,
    errors: [400],
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<AuditEventDto>> {
    return this.events.list(query);
  }

  @Get(':id')
  @Authorize({
    permission: 'audit.read',
    summary: 'Get an audit event (cached)',
    returns: AuditEventDto,
    errors: [400, 404],
  })
  get(@IdParam() id: number): Promise<ResourceResponse<AuditEventDto>> {
    return this.events.get(id);
  }
}
