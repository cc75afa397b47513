import { Injectable } from '@nestjs/common';
import { resourceIdJson } from '../platform/audit/audit-trail.repository.js';
import { Projections } from '../platform/projections/projections.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import type { AuditEventDto } from './audit-event.dto.js';
import { table } from '../platform/database/table.js';

interface AuditEventRow extends AuditEventDto {
  readonly version: number;
}

const RESOURCE_COLUMNS = `id, occurred_at, actor_id, action, resource_type, ${resourceIdJson()}, request_id, reason, changes`;

/**
 * `GET /audit-events`: every filter has an index in the default order (`occurred_at DESC, id`),
 * and past 10 000 matches the total is the planner's estimate, so pages stay fast at any size.
 */
export const AUDIT_EVENT_LIST = listSpec({
  from: 'audit_events',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'occurred_at'],
  defaultSort: 'occurred_at:desc',
  filters: {
    actor_id: 'int',
    action: 'string',
    resource_type: 'string',
    resource_id: 'string',
    request_id: 'string',
    occurred_after: { column: 'occurred_at', type: 'timestamp', operator: '>' },
    occurred_before: { column: 'occurred_at', type: 'timestamp', operator: '<' },
  },
  appendOnly: true,
});

const AUDIT_EVENTS = table('audit_events', { columns: RESOURCE_COLUMNS, version: '1', list: AUDIT_EVENT_LIST });

/** Audit events are never changed, so a cached detail never goes stale (version 1 for ever). */
@Injectable()
export class AuditEventsRepository extends ResourceTable<AuditEventRow> {
  constructor(uow: UnitOfWork, projections: Projections) {
    super({ table: AUDIT_EVENTS, type: 'audit_event', notFound: 'AUDIT_EVENT_NOT_FOUND' }, uow, projections);
  }
}
