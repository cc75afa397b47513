import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../../platform/auth/authorize.decorator.js';
import { IdParam } from '../../platform/http/id.pipe.js';
import { Describe } from '../../platform/http/openapi/describe.decorator.js';
import { ListMetaDto } from '../../platform/http/openapi/envelope.dto.js';
import type { ListResponse } from '../../platform/http/responses.js';
import { UserGroupDto, UserGroupsQueryDto } from '../dto/group.dto.js';
import { GroupMemberListsService } from '../group-member-lists.service.js';

/** `/v1/admin/users/{id}/groups` (part 6.18): the groups a user belongs to. */
@ApiTags('groups')
@Controller('v1/admin/users/:id/groups')
export class UserGroupsController {
  constructor(private readonly lists: GroupMemberListsService) {}

  @Get()
  @Authorize({ permission: 'groups.read' })
  @Describe({
    summary: 'The groups a user belongs to, directly and through nesting',
    description: 'One row per group, `{group_id, via, expires_at}`: `via` runs from the user’s own group to it.',
    returns: UserGroupDto,
    listMeta: ListMetaDto,
    errors: [400, 404],
  })
  list(@IdParam() id: number, @Query() query: UserGroupsQueryDto): Promise<ListResponse<UserGroupDto>> {
    return this.lists.groupsOf(id, query);
  }
}
