import { Module } from '@nestjs/common';
import { MobileDevicesModule } from '../mobile-devices/mobile-devices.module.js';
import { ReadStateModule } from '../read-state/read-state.module.js';
import { BulkDeleteService } from './bulk-delete.service.js';
import { InboxController } from './inbox.controller.js';
import { MessagesRepository } from './messages.repository.js';
import { MessagesService } from './messages.service.js';
import { PushDeliveriesRepository } from './push-deliveries.repository.js';
import { SendPushWorker } from './send-push.worker.js';
import { EventsModule } from '../events/events.module.js';

/** Inbox messages and their push delivery (parts 6.7 and 6.10). */
@Module({
  imports: [EventsModule, ReadStateModule, MobileDevicesModule],
  controllers: [InboxController],
  providers: [PushDeliveriesRepository, MessagesRepository, MessagesService, BulkDeleteService, SendPushWorker],
})
export class InboxModule {}
