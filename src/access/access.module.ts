import { Module } from '@nestjs/common';
import { AuthoritiesModule } from '../authorities/authorities.module.js';
import { UsersModule } from '../users/users.module.js';
import { AccessExpiriesRepository } from './access-expiries.repository.js';
import { AccessExpiryAnnouncer } from './access-expiry-announcer.js';
import { AccessHistoryRepository } from './access-history.repository.js';
import { DeviceAccessWindowsRepository } from './device-access-windows.repository.js';
import { AccessTimelineService } from './access-timeline.service.js';
import { AccessService } from './access.service.js';
import { AuthzCheckService } from './authz-check.service.js';
import { AuthzController } from './authz.controller.js';
import { AccessTimelineController } from './devices/access-timeline.controller.js';
import { DeviceAccessController } from './devices/access.controller.js';
import { UserAccessController } from './users/access.controller.js';

/**
 * The access questions (part 6.13) and `/authz/check` (part 5): who may act where, now and as of a
 * moment, all answered by the guards' own evaluator.
 */
@Module({
  imports: [UsersModule, AuthoritiesModule],
  controllers: [AuthzController, DeviceAccessController, AccessTimelineController, UserAccessController],
  providers: [
    AccessHistoryRepository,
    DeviceAccessWindowsRepository,
    AccessService,
    AccessTimelineService,
    AuthzCheckService,
    AccessExpiriesRepository,
    AccessExpiryAnnouncer,
  ],
  exports: [AccessExpiryAnnouncer],
})
export class AccessModule {}
