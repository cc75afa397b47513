import { Module } from '@nestjs/common';
import { AuthoritiesController } from './authorities.controller.js';
import { AuthoritiesRepository } from './authorities.repository.js';
import { AuthoritiesService } from './authorities.service.js';
import { AuthorityActionsService } from './authority-actions.service.js';
import { DevicesController } from './devices.controller.js';
import { DevicesRepository } from './devices.repository.js';
import { DevicesService } from './devices.service.js';
import { OwnershipService } from './ownership.service.js';

/** Devices, authorities and ownership (parts 6.2 and 6.3). */
@Module({
  controllers: [DevicesController, AuthoritiesController],
  providers: [
    DevicesRepository,
    DevicesService,
    OwnershipService,
    AuthoritiesRepository,
    AuthoritiesService,
    AuthorityActionsService,
  ],
  exports: [AuthoritiesRepository],
})
export class AuthoritiesModule {}
