import { Module } from '@nestjs/common';
import { AuditEventsController } from './audit-events.controller.js';
import { AuditEventsRepository } from './audit-events.repository.js';
import { AuditEventsService } from './audit-events.service.js';

/** `GET /audit-events` (part 6.10): reading the trail the platform's audit writer appends. */
@Module({
  controllers: [AuditEventsController],
  providers: [AuditEventsRepository, AuditEventsService],
})
export class AuditEventsModule {}
