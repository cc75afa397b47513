import { Describe } from '../../platform/http/openapi/describe.decorator.js';
import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../../platform/auth/authorize.decorator.js';
import { IdParam } from '../../platform/http/id.pipe.js';
import type { ListResponse } from '../../platform/http/responses.js';
import { AccessService } from '../access.service.js';
import { AccessListMetaDto, DeviceAccessDto, DeviceAccessQueryDto } from '../dto/access.dto.js';

/** `/v1/admin/devices/{id}/access` (part 6.13): who may act on a device, now or as of a moment. */
@ApiTags('access')
@Controller('v1/admin/devices/:id/access')
export class DeviceAccessController {
  constructor(private readonly access: AccessService) {}

  @Get()
  @Authorize({
    permission: 'access.read',
  })
  @Describe({
    summary:
      'Every user allowed a device-scoped permission on this device, with every reason (optionally as of a moment)',
    description:
      'Users allowed by their role are included; deleted and non-active users are not. `via` keeps users allowed by at least one of the named ways. ' +
      '`at` answers as of that moment from the access history (the same rules, expiry judged at `at`). Sorted by `user_id`.',
    returns: DeviceAccessDto,
    listMeta: AccessListMetaDto,
    errors: [400, 404, 422],
  })
  list(@IdParam() id: number, @Query() query: DeviceAccessQueryDto): Promise<ListResponse<DeviceAccessDto>> {
    return this.access.deviceAccess(id, query);
  }
}
