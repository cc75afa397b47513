import { Module } from '@nestjs/common';
import { GroupsModule } from '../groups/groups.module.js';
import { UsersModule } from '../users/users.module.js';
import { ScimGroupsController } from './groups.controller.js';
import { ScimGroupsRepository } from './scim-groups.repository.js';
import { ScimGroupsService } from './scim-groups.service.js';
import { ScimUsersRepository } from './scim-users.repository.js';
import { ScimUsersService } from './scim-users.service.js';
import { ScimUsersController } from './users.controller.js';
import { ScimV2Controller } from './v2.controller.js';

/** SCIM 2.0 provisioning (part 6.19): a service provider over the admin API's users and groups. */
@Module({
  imports: [UsersModule, GroupsModule],
  controllers: [ScimV2Controller, ScimUsersController, ScimGroupsController],
  providers: [ScimUsersRepository, ScimUsersService, ScimGroupsRepository, ScimGroupsService],
})
export class ScimModule {}
