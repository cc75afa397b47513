import { preparedWrite, type Statement } from '../database/prepared.js';
import { table } from '../database/table.js';

/** The audit trail and the feed: every audit event is also an event on the feed (part 6.12). */
export const AUDIT_EVENTS = table('audit_events');
export const EVENTS = table('events');

/** How a statement is run: `tx.write` inside a unit of work, a plain query of its text in the CLI. */
export type StatementRunner = (statement: Statement, params: readonly unknown[]) => Promise<unknown>;

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

// Prepared: every write of the service appends through it (parsed and planned once a connection).
const APPEND_AUDIT_EVENTS = preparedWrite(
  'audit-append',
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
);

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
  await run(APPEND_AUDIT_EVENTS, [
    by.actor_id,
    by.request_id,
    events.map((event) => event.action),
    events.map((event) => event.resource_type),
    events.map((event) => event.resource_id),
    events.map((event) => event.reason),
    events.map((event) => JSON.stringify(event.changes)),
    events.map((event) => (event.resource === undefined ? null : JSON.stringify(event.resource))),
  ]);
}

/** An access change as the feed announces it (`access.gained` / `access.lost`, part 6.17). */
export interface NewAccessEvent {
  readonly user_id: number;
  readonly device_id: number | null;
  readonly permission_code: string;
  readonly decided_by: string;
  readonly change: 'gained' | 'lost';
  /** The group the way runs through (v1.3), carried in `data` only when there is one. */
  readonly group_id?: number;
}

// Prepared as the audit events' append is: every write that changes someone's access appends through it.
const APPEND_ACCESS_EVENTS = preparedWrite(
  'access-events-append',
  `INSERT INTO events (type, occurred_at, actor_id, request_id, resource_type, resource_id, data)
     SELECT 'access.' || c.change, coalesce(c.occurred_at, now()), $1, $2, 'user', c.user_id::text,
            jsonb_build_object('user_id', c.user_id, 'device_id', c.device_id, 'permission_code', c.permission_code,
                               'decided_by', c.decided_by, 'cause', $3::text)
              || CASE WHEN c.group_id IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('group_id', c.group_id) END
     FROM unnest($4::text[], $5::bigint[], $6::bigint[], $7::text[], $8::text[], $9::timestamptz[], $10::bigint[])
       WITH ORDINALITY AS c(change, user_id, device_id, permission_code, decided_by, occurred_at, group_id, ord)
     ORDER BY c.ord`,
);

/**
 * Appends `access.gained` / `access.lost` feed events (not audit events: the write that caused
 * them has its own) in one statement. `cause` is `"expired"`, or `"write"`, which the feed's
 * commit step replaces with the id of the transaction's first other event, the write's own
 * (an id exists only once the transaction commits), or an event id already known (changes
 * appended after their write committed). `occurredAt` defaults to the transaction's time; an
 * expiry passes its instant.
 */
export async function appendAccessEvents(
  run: StatementRunner,
  by: { readonly actor_id: number | null; readonly request_id: string | null },
  changes: readonly NewAccessEvent[],
  cause: string,
  occurredAt?: readonly string[],
): Promise<void> {
  if (changes.length === 0) return;
  await run(APPEND_ACCESS_EVENTS, [
    by.actor_id,
    by.request_id,
    cause,
    changes.map((change) => change.change),
    changes.map((change) => change.user_id),
    changes.map((change) => change.device_id),
    changes.map((change) => change.permission_code),
    changes.map((change) => change.decided_by),
    occurredAt ?? changes.map(() => null),
    changes.map((change) => change.group_id ?? null),
  ]);
}
