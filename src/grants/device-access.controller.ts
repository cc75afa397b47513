import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../auth/authorize.decorator.js';
import { IdParam } from '../common/id.pipe.js';
import type { ListResponse } from '../common/responses.js';
import { AccessTimelineService } from './access-timeline.service.js';
import { AccessService } from './access.service.js';
import { AccessListMetaDto, DeviceAccessDto, DeviceAccessQueryDto } from './dto/access.dto.js';
import { AccessTimelineEntryDto, AccessTimelineQueryDto } from './dto/access-timeline.dto.js';

/** `/v1/admin/devices/{id}/access` and its timeline (part 6.13): who may act on a device, now, then, and since when. */
@ApiTags('access')
@Controller('v1/admin/devices')
export class DeviceAccessController {
  constructor(
    private readonly access: AccessService,
    private readonly timeline: AccessTimelineService,
  ) {}

  @Get(':id/access')
  @Authorize({
    permission: 'access.read',
    summary:
      'Every user allowed a device-scoped permission on this device, with every reason (optionally as of a moment)',
    description:
      'Users allowed by their role are included; deleted and non-active users are not. `via` keeps users allowed by at least one of the named ways. ' +
      '`at` answers as of that moment from the access history (the same rules, expiry judged at `at`). Sorted by `user_id`.',
    returns: DeviceAccessDto,
    listMeta: AccessListMetaDto,
    errors: [400, 404, 422],
  })
  deviceAccess(@IdParam() id: number, @Query() query: DeviceAccessQueryDto): Promise<ListResponse<DeviceAccessDto>> {
    return this.access.deviceAccess(id, query);
  }

  @Get(':id/access-timeline')
  @Authorize({
    permission: 'access.read',
    summary: 'Every gain and loss of a right on this device, newest first, with cause, actor and event',
    description:
      'Rights held through the device itself: an authority that is the owner or holds the permission, of a user then active and with admin access. ' +
      'Rights from a role or a permission grant hold on every device and are on the user’s trail (`GET /audit-events`), not here.',
    returns: AccessTimelineEntryDto,
    listMeta: AccessListMetaDto,
    errors: [400, 404, 422],
  })
  accessTimeline(
    @IdParam() id: number,
    @Query() query: AccessTimelineQueryDto,
  ): Promise<ListResponse<AccessTimelineEntryDto>> {
    return this.timeline.timeline(id, query);
  }
}
