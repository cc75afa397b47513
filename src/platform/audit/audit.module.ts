import { Global, Module } from '@nestjs/common';
import { AuditService } from './audit.service.js';

/** The append-only audit trail every write appends to in its own transaction. */
@Global()
@Module({
  providers: [AuditService],
  exports: [AuditService],
})
export class AuditModule {}
