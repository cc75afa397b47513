import { Controller } from '@nestjs/common';
import { scimResourceRoutes } from './scim-resource-routes.js';
import { ScimUsersService } from './scim-users.service.js';

/** `/scim/v2/Users` (part 6.19): the identity provider's view of the admin API's users. */
@Controller('scim/v2/Users')
export class ScimUsersController extends scimResourceRoutes({
  noun: 'user',
  notFound: 'USER_NOT_FOUND',
  service: ScimUsersService,
  create: 'Its own role is SCIM_DEFAULT_ROLE_ID (roles come from groups); active (default true) activates it.',
  replace: 'active false suspends the user and revokes every session at once.',
  remove: 'As DELETE /v1/admin/users/{id}: a soft delete that revokes every session.',
}) {}
