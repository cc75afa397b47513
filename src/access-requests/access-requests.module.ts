import { Module } from '@nestjs/common';
import { AuthoritiesModule } from '../authorities/authorities.module.js';
import { GrantsModule } from '../grants/grants.module.js';
import { InboxModule } from '../inbox/inbox.module.js';
import { UsersModule } from '../users/users.module.js';
import { AccessRequestDecisions } from './access-request-decisions.service.js';
import { AccessRequestExpiry } from './access-request-expiry.js';
import { AccessRequestRules } from './access-request-rules.service.js';
import { AccessRequestsController } from './access-requests.controller.js';
import { AccessRequestsRepository } from './access-requests.repository.js';
import { AccessRequestsService } from './access-requests.service.js';
import { AccessRequestDeviceLocator } from './device-locators.js';

/**
 * Just-in-time access (part 6.15): an operator asks for a device-scoped permission for a while;
 * an approver grants it as an expiring authority permission (through the grants module), and
 * everyone concerned is told through the inbox.
 */
@Module({
  imports: [UsersModule, AuthoritiesModule, GrantsModule, InboxModule],
  controllers: [AccessRequestsController],
  providers: [
    AccessRequestsRepository,
    AccessRequestRules,
    AccessRequestsService,
    AccessRequestDecisions,
    AccessRequestExpiry,
    AccessRequestDeviceLocator,
  ],
})
export class AccessRequestsModule {}
