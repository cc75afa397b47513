import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { currentRequest } from '../common/request-context.js';

export interface AuditRecord {
  /** `<resource_type>.<verb>`, e.g. `user.create`. */
  readonly action: string;
  readonly resource_type: string;
  readonly resource_id: number | string | null;
  readonly reason?: string | null;
  readonly changes?: Record<string, readonly [unknown, unknown]>;
}

/**
 * Appends audit events inside the caller's transaction, so an event exists exactly when its
 * write committed. The actor and request id come from the request context.
 */
@Injectable()
export class AuditService {
  async record(db: EntityManager, event: AuditRecord): Promise<void> {
    const context = currentRequest();
    await db.query(
      `INSERT INTO audit_events (actor_id, action, resource_type, resource_id, request_id, reason, changes)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        context?.actor_id ?? null,
        event.action,
        event.resource_type,
        event.resource_id === null ? null : String(event.resource_id),
        context?.request_id ?? null,
        event.reason ?? null,
        JSON.stringify(event.changes ?? {}),
      ],
    );
  }

  /** Many events in one statement (bulk writes: one event per changed row, no round trip per item). */
  async recordMany(db: EntityManager, events: readonly AuditRecord[]): Promise<void> {
    if (events.length === 0) return;
    const context = currentRequest();
    await db.query(
      `INSERT INTO audit_events (actor_id, action, resource_type, resource_id, request_id, reason, changes)
       SELECT $1, e.action, e.resource_type, e.resource_id, $2, e.reason, e.changes
       FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[]) AS e(action, resource_type, resource_id, reason, changes)`,
      [
        context?.actor_id ?? null,
        context?.request_id ?? null,
        events.map((event) => event.action),
        events.map((event) => event.resource_type),
        events.map((event) => (event.resource_id === null ? null : String(event.resource_id))),
        events.map((event) => event.reason ?? null),
        events.map((event) => JSON.stringify(event.changes ?? {})),
      ],
    );
  }
}

/**
 * `[before, after]` for each listed field whose value changed. Secret fields are never passed
 * here; callers list only the fields that may be shown.
 */
export function diffChanges<T extends object>(
  before: T | null,
  after: T,
  fields: readonly (keyof T & string)[],
): Record<string, readonly [unknown, unknown]> {
  const changes: Record<string, readonly [unknown, unknown]> = {};
  for (const field of fields) {
    const was = before === null ? null : normalise(before[field]);
    const now = normalise(after[field]);
    if (JSON.stringify(was) !== JSON.stringify(now)) changes[field] = [was, now];
  }
  return changes;
}

function normalise(value: unknown): unknown {
  return value instanceof Date ? value.toISOString() : (value ?? null);
}
