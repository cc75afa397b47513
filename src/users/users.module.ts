import { Module } from '@nestjs/common';
import { UserReferences } from './user-references.repository.js';
import { UserActionsService } from './user-actions.service.js';
import { UserSessionsService } from './user-sessions.service.js';
import { UsersController } from './users.controller.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

@Module({
  controllers: [UsersController],
  providers: [UserReferences, UsersRepository, UsersService, UserActionsService, UserSessionsService],
  exports: [UserReferences, UsersService, UsersRepository, UserActionsService],
})
export class UsersModule {}
