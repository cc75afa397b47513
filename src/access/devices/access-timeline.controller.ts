import { Describe } from '../../platform/http/openapi/describe.decorator.js';
import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../../platform/auth/authorize.decorator.js';
import { IdParam } from '../../platform/http/id.pipe.js';
import type { ListResponse } from '../../platform/http/responses.js';
import { AccessTimelineService } from '../access-timeline.service.js';
import { AccessListMetaDto } from '../dto/access.dto.js';
import { AccessTimelineEntryDto, AccessTimelineQueryDto } from '../dto/access-timeline.dto.js';

/** `/v1/admin/devices/{id}/access-timeline` (part 6.13): every gain and loss of a right on a device. */
@ApiTags('access')
@Controller('v1/admin/devices/:id/access-timeline')
export class AccessTimelineController {
  constructor(private readonly timeline: AccessTimelineService) {}

  @Get()
  @Authorize({
    permission: 'access.read',
  })
  @Describe({
    summary: 'Every gain and loss of a right on this device, newest first, with cause, actor and event',
    description:
      'Rights held through the device itself: an authority that is the owner or holds the permission, of a user then active and with admin access. ' +
      'Rights from a role or a permission grant hold on every device and are on the user’s trail (`GET /audit-events`), not here.',
    returns: AccessTimelineEntryDto,
    listMeta: AccessListMetaDto,
    errors: [400, 404, 422],
  })
  list(@IdParam() id: number, @Query() query: AccessTimelineQueryDto): Promise<ListResponse<AccessTimelineEntryDto>> {
    return this.timeline.timeline(id, query);
  }
}
