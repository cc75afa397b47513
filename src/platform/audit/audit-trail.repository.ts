import { table } from '../database/table.js';

/** The audit trail and the feed: every audit event is also an event on the feed (part 6.12). */
export const AUDIT_EVENTS = table('audit_events');
export const EVENTS = table('events');

/** How a statement is run: `tx.write` inside a unit of work, a plain query in the CLI. */
export type StatementRunner = (text: string, params: readonly unknown[]) => Promise<unknown>;

// Ids are JSON numbers except session ids (part 1); `resource_id` is stored as text for both.
/** A numeric id as a JSON number, anything else (a session id) as a string: as the API shows ids. */
export function resourceIdJson(column = 'resource_id'): string {
  return `CASE WHEN ${column} ~ '^[1-9][0-9]{0,15}$' THEN to_jsonb(${column}::bigint) ELSE to_jsonb(${column}) END AS resource_id`;
}

/** One event as it is appended: who and which request come from the request context. */
export interface NewAuditEvent {
  readonly action: string;
  readonly resource_type: string;
  readonly resource_id: string | null;
  readonly reason: string | null;
  readonly changes: Readonly<Record<string, unknown>>;
  /** The resource as the API shows it after the write, when the write noted it (the feed's `data`). */
  readonly resource?: object;
}

/**
 * Appends audit events, and the same events to the event feed (part 6.12) with the resource as
 * it reads after the write, in one statement inside the caller's transaction. A plain function,
 * not a method, so the CLI (which has no Nest container) appends through the same statement.
 */
export async function appendAuditEvents(
  run: StatementRunner,
  by: { readonly actor_id: number | null; readonly request_id: string | null },
  events: readonly NewAuditEvent[],
): Promise<void> {
  if (events.length === 0) return;
  await run(
    `WITH feed_written AS (
       -- Tells the audit trail's upgrade-time trigger that the feed events are written here.
       SELECT set_config('admin_api.feed_written', 'on', true)
     ), e AS (
       SELECT e.* FROM feed_written, unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::jsonb[])
         WITH ORDINALITY AS e(action, resource_type, resource_id, reason, changes, resource, ord)
     ), audited AS (
       INSERT INTO audit_events (actor_id, action, resource_type, resource_id, request_id, reason, changes)
       SELECT $1, e.action, e.resource_type, e.resource_id, $2, e.reason, e.changes FROM e ORDER BY e.ord
     )
     INSERT INTO events (type, actor_id, request_id, resource_type, resource_id, data)
     SELECT e.action, $1, $2, e.resource_type, e.resource_id, COALESCE(e.resource, '{}') || jsonb_build_object('changes', e.changes)
     FROM e ORDER BY e.ord`,
    [
      by.actor_id,
      by.request_id,
      events.map((event) => event.action),
      events.map((event) => event.resource_type),
      events.map((event) => event.resource_id),
      events.map((event) => event.reason),
      events.map((event) => JSON.stringify(event.changes)),
      events.map((event) => (event.resource === undefined ? null : JSON.stringify(event.resource))),
    ],
  );
}
