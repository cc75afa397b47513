import { Describe } from '../../platform/http/openapi/describe.decorator.js';
import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../../platform/auth/authorize.decorator.js';
import { IdParam } from '../../platform/http/id.pipe.js';
import type { ListResponse } from '../../platform/http/responses.js';
import { AccessService } from '../access.service.js';
import { UserAccessDto, UserAccessMetaDto, UserAccessQueryDto } from '../dto/access.dto.js';

/** `/v1/admin/users/{id}/access` (part 6.13): where a user may act, now or as of a moment. */
@ApiTags('access')
@Controller('v1/admin/users/:id/access')
export class UserAccessController {
  constructor(private readonly access: AccessService) {}

  @Get()
  @Authorize({
    permission: 'access.read',
  })
  @Describe({
    summary:
      'The devices on which a user is allowed a device-scoped permission, with every reason (optionally as of a moment)',
    description:
      'When the role or a grant allows it everywhere, `meta.scope` is `all` and `data` lists only the devices an authority also allows. ' +
      '`at` answers as of that moment from the access history; a deleted user can be asked about with `at`. Sorted by `device_id`.',
    returns: UserAccessDto,
    listMeta: UserAccessMetaDto,
    errors: [400, 404, 422],
  })
  list(@IdParam() id: number, @Query() query: UserAccessQueryDto): Promise<ListResponse<UserAccessDto>> {
    return this.access.userAccess(id, query);
  }
}
