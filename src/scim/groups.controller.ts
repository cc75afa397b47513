import { Controller } from '@nestjs/common';
import { scimResourceRoutes } from './scim-resource-routes.js';
import { ScimGroupsService } from './scim-groups.service.js';

/** `/scim/v2/Groups` (part 6.19): the identity provider's view of the admin API's groups and their direct members. */
@Controller('scim/v2/Groups')
export class ScimGroupsController extends scimResourceRoutes({
  noun: 'group',
  notFound: 'GROUP_NOT_FOUND',
  service: ScimGroupsService,
  create:
    'members (type User, or Group for a nested group) are added as POST /v1/admin/groups/{id}/members would, all or none.',
  replace: 'members replaces the direct members.',
  remove: 'As DELETE /v1/admin/groups/{id}: a soft delete; no member holds anything through it.',
}) {}
