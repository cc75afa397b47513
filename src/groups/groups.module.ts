import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { GroupMemberListsService } from './group-member-lists.service.js';
import { GroupMembersService } from './group-members.service.js';
import { GroupMembershipsRepository } from './group-memberships.repository.js';
import { GroupsController } from './groups.controller.js';
import { GroupsRepository } from './groups.repository.js';
import { GroupsService } from './groups.service.js';
import { UserGroupsController } from './users/groups.controller.js';

/** Groups and their memberships (part 6.18); what groups confer is judged by the access model. */
@Module({
  imports: [UsersModule],
  controllers: [GroupsController, UserGroupsController],
  providers: [
    GroupsRepository,
    GroupMembershipsRepository,
    GroupsService,
    GroupMembersService,
    GroupMemberListsService,
  ],
  exports: [GroupsRepository, GroupsService, GroupMembersService],
})
export class GroupsModule {}
