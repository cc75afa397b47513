import { Module } from '@nestjs/common';
import { EventsController } from './events.controller.js';
import { EventsPurge } from './events.purge.js';
import { EventsRepository } from './events.repository.js';
import { EventsService } from './events.service.js';

/** The event feed (part 6.12): audit events and worker events, by cursor, in commit order. */
@Module({
  controllers: [EventsController],
  providers: [EventsRepository, EventsService, EventsPurge],
  exports: [EventsRepository],
})
export class EventsModule {}
