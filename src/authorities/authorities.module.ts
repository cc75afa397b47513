import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { GroupsModule } from '../groups/groups.module.js';
import { AuthorityReferences } from './authority-references.repository.js';
import { AuthoritiesController } from './authorities.controller.js';
import { AuthoritiesRepository } from './authorities.repository.js';
import { AuthoritiesService } from './authorities.service.js';
import { AuthorityActionsService } from './authority-actions.service.js';
import { AuthorityDeviceLocators } from './device-locators.js';
import { DevicesController } from './devices.controller.js';
import { DevicesRepository } from './devices.repository.js';
import { DevicesService } from './devices.service.js';
import { OwnershipService } from './ownership.service.js';

/** Devices, authorities and ownership (parts 6.2 and 6.3). */
@Module({
  imports: [UsersModule, GroupsModule],
  controllers: [DevicesController, AuthoritiesController],
  providers: [
    AuthorityReferences,
    DevicesRepository,
    DevicesService,
    OwnershipService,
    AuthoritiesRepository,
    AuthoritiesService,
    AuthorityActionsService,
    AuthorityDeviceLocators,
  ],
  exports: [AuthorityReferences, AuthoritiesRepository],
})
export class AuthoritiesModule {}
