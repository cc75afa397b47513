import { Injectable } from '@nestjs/common';
import { currentRequest } from '../http/request-context.js';
import type { Tx } from '../database/unit-of-work.js';
import { appendAuditEvents, AUDIT_EVENTS, EVENTS, type NewAuditEvent } from './audit-trail.repository.js';

/** `<resource_type>.<verb>`, e.g. `user.create`: the event's resource type is the prefix. */
export type AuditAction = `${string}.${string}`;

export type Changes = Readonly<Record<string, readonly [unknown, unknown]>>;

export interface AuditDetails {
  readonly reason?: string | null;
  readonly changes?: Changes;
  /**
   * The record as it was before the write: the stamps the write set (`updated_by`, `revoked_by`,
   * `revoke_reason`, …, see STAMP_FIELDS) are added to `changes` from it and the record as the
   * write left it (what its repository noted on the transaction).
   */
  readonly before?: object;
}

/** The fields a write stamps rather than the caller's: listed in `changes` when the write changed them. */
export const STAMP_FIELDS = [
  'updated_by',
  'deleted_at',
  'deleted_by',
  'revoked_at',
  'revoked_by',
  'revoke_reason',
  'removed_at',
  'removed_by',
  'remove_reason',
  'deactivated_at',
  'deactivated_by',
  'deactivation_reason',
] as const;

/** The revocation stamps of a live row (grants, authority permissions, sessions): what a revoke changes from. */
export const NOT_REVOKED = { revoked_at: null, revoked_by: null, revoke_reason: null } as const;

export interface AuditRecord extends AuditDetails {
  readonly action: AuditAction;
  readonly resource_id: number | string | null;
  /** The feed's `data` when it is not the resource the write noted (a membership, for `group.member_add`). */
  readonly data?: object;
}

/**
 * Appends audit events inside the caller's transaction, so an event exists exactly when its
 * write committed. The actor and request id come from the request context; the resource type
 * is the action's prefix, so the two can never disagree.
 */
@Injectable()
export class AuditService {
  record(tx: Tx, action: AuditAction, resourceId: number | string | null, details: AuditDetails = {}): Promise<void> {
    return this.recordMany(tx, [{ action, resource_id: resourceId, ...details }]);
  }

  /** Many events in one statement (bulk writes: one event per changed row, no round trip per item). */
  recordMany(tx: Tx, events: readonly AuditRecord[]): Promise<void> {
    const context = currentRequest();
    // Each audit event is also an event on the feed (part 6.12), with the resource the write noted.
    return appendAuditEvents(
      (statement, params) => tx.write([AUDIT_EVENTS, EVENTS], statement, params),
      // The transaction's actor, as its rows' `*_by` stamps name it.
      { actor_id: tx.actor, request_id: context?.request_id ?? null },
      toAuditEvents(events).map((event, index) => {
        const after = event.resource_id === null ? undefined : tx.resourceAfter(event.resource_type, event.resource_id);
        const before = events[index]?.before;
        const stamped =
          before === undefined || after === undefined
            ? event
            : { ...event, changes: { ...stampChanges(before, after), ...event.changes } };
        const resource = events[index]?.data ?? after;
        return resource === undefined ? stamped : { ...stamped, resource };
      }),
    );
  }
}

/** The rows to append: the resource type is the action's prefix, ids are stored as text. */
export function toAuditEvents(events: readonly AuditRecord[]): NewAuditEvent[] {
  return events.map((event) => ({
    action: event.action,
    resource_type: event.action.slice(0, event.action.indexOf('.')),
    resource_id: event.resource_id === null ? null : String(event.resource_id),
    reason: event.reason ?? null,
    changes: event.changes ?? {},
  }));
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

/** `[before, after]` of each stamp field both sides name that the write changed. */
function stampChanges(before: object, after: object): Record<string, readonly [unknown, unknown]> {
  const fields = STAMP_FIELDS.filter((field) => field in after && field in before);
  return diffChanges(before as Record<string, unknown>, after as Record<string, unknown>, fields);
}

function normalise(value: unknown): unknown {
  return value instanceof Date ? value.toISOString() : (value ?? null);
}
