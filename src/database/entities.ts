import { AuditEvent } from '../audit/audit-event.entity.js';

/** Every TypeORM entity of the service; domain modules add theirs here. */
export const ENTITIES = [AuditEvent];
