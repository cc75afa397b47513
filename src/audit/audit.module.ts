import { Global, Module } from '@nestjs/common';
import { AuditEventsController } from './audit-events.controller.js';
import { AuditEventsRepository } from './audit-events.repository.js';
import { AuditEventsService } from './audit-events.service.js';
import { AuditService } from './audit.service.js';

@Global()
@Module({
  controllers: [AuditEventsController],
  providers: [AuditService, AuditEventsRepository, AuditEventsService],
  exports: [AuditService],
})
export class AuditModule {}
