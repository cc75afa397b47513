import { Injectable } from '@nestjs/common';
import type { ListResponse, ResourceResponse } from '../platform/http/responses.js';
import { AuditEventsRepository } from './audit-events.repository.js';
import type { AuditEventDto } from './audit-event.dto.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

/** Reading the audit trail (part 6.10); it is written by `AuditService` inside every write. */
@Injectable()
export class AuditEventsService {
  constructor(private readonly events: AuditEventsRepository) {}

  list(query: Record<string, unknown>): Promise<ListResponse<AuditEventDto>> {
    return this.events.list(query);
  }

  get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<AuditEventDto>> {
    return this.events.detail(id, false, prefetched);
  }
}
