import { Injectable } from '@nestjs/common';
import { CacheService } from '../cache/cache.service.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { ResourceTable } from '../database/resource-table.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { AuditEventDto } from './dto/audit-event.dto.js';

interface AuditEventRow extends AuditEventDto {
  readonly version: number;
}

// Ids are JSON numbers except session ids (part 1); `resource_id` is stored as text for both.
const RESOURCE_ID = `CASE WHEN resource_id ~ '^[1-9][0-9]{0,15}$' THEN to_jsonb(resource_id::bigint) ELSE to_jsonb(resource_id) END AS resource_id`;
const RESOURCE_COLUMNS = `id, occurred_at, actor_id, action, resource_type, ${RESOURCE_ID}, request_id, reason, changes`;

/**
 * `GET /audit-events`: every filter has an index in the default order (`occurred_at DESC, id`),
 * and past 10 000 matches the total is the planner's estimate, so pages stay fast at any size.
 */
export const AUDIT_EVENT_LIST: ListSpec = {
  from: 'audit_events',
  select: RESOURCE_COLUMNS,
  idColumn: 'id',
  sort: { id: 'id', occurred_at: 'occurred_at' },
  defaultSort: 'occurred_at:desc',
  filters: {
    actor_id: { column: 'actor_id', type: 'int' },
    action: { column: 'action', type: 'string' },
    resource_type: { column: 'resource_type', type: 'string' },
    resource_id: { column: 'resource_id', type: 'string' },
    request_id: { column: 'request_id', type: 'string' },
    occurred_after: { column: 'occurred_at', type: 'timestamp', operator: '>' },
    occurred_before: { column: 'occurred_at', type: 'timestamp', operator: '<' },
  },
  search: [],
  appendOnly: true,
};

/** Audit events are never changed, so a cached detail never goes stale (version 1 for ever). */
@Injectable()
export class AuditEventsRepository extends ResourceTable<AuditEventRow> {
  constructor(uow: UnitOfWork, cache: CacheService) {
    super(
      {
        table: 'audit_events',
        columns: `1 AS version, ${RESOURCE_COLUMNS}`,
        type: 'audit_event',
        notFound: 'AUDIT_EVENT_NOT_FOUND',
        list: AUDIT_EVENT_LIST,
      },
      uow,
      cache,
    );
  }
}
