import { Injectable } from '@nestjs/common';
import { parseListQuery } from '../common/list/list-query.parser.js';
import { runList } from '../common/list/list-runner.js';
import type { ListResponse, ResourceResponse } from '../common/responses.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { AUDIT_EVENT_LIST, AuditEventsRepository } from './audit-events.repository.js';
import type { AuditEventDto } from './dto/audit-event.dto.js';

/** Reading the audit trail (part 6.10); it is written by `AuditService` inside every write. */
@Injectable()
export class AuditEventsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly events: AuditEventsRepository,
  ) {}

  list(query: Record<string, unknown>): Promise<ListResponse<AuditEventDto>> {
    return runList<AuditEventDto>(this.uow.reader, AUDIT_EVENT_LIST, parseListQuery(AUDIT_EVENT_LIST, query));
  }

  get(id: number): Promise<ResourceResponse<AuditEventDto>> {
    return this.events.detail(id);
  }
}
