import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { MobileDevicesModule } from '../mobile-devices/mobile-devices.module.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { ReadStateModule } from '../read-state/read-state.module.js';
import { EventsModule } from '../events/events.module.js';
import { BulkDeleteService } from './bulk-delete.service.js';
import { InboxController } from './inbox.controller.js';
import { MessagesRepository } from './messages.repository.js';
import { MessagesService } from './messages.service.js';
import { PushDeliveriesRepository } from './push-deliveries.repository.js';
import { FcmPushProvider, parseFcmCredentials } from './push/fcm-push.provider.js';
import { LogPushProvider, PUSH_PROVIDER, type PushProvider } from './push/push-provider.js';
import { SendPushWorker } from './send-push.worker.js';

function createPushProvider(settings: Settings): PushProvider {
  if (settings.pushProvider === 'log') return new LogPushProvider();
  return new FcmPushProvider(
    parseFcmCredentials(settings.fcmCredentials ?? ''),
    settings.fcmEndpoint ?? 'https://fcm.googleapis.com',
  );
}

/** Inbox messages and their push delivery through the configured provider (parts 6.7 and 6.10). */
@Module({
  imports: [UsersModule, EventsModule, ReadStateModule, MobileDevicesModule],
  controllers: [InboxController],
  providers: [
    PushDeliveriesRepository,
    MessagesRepository,
    MessagesService,
    BulkDeleteService,
    SendPushWorker,
    { provide: PUSH_PROVIDER, inject: [SETTINGS], useFactory: createPushProvider },
  ],
  // Other features send their notices through `MessagesService.notify`.
  exports: [MessagesService],
})
export class InboxModule {}
