import { Injectable } from '@nestjs/common';
import { ApiError } from '../platform/http/api-error.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import type { Tx } from '../platform/database/unit-of-work.js';
import type { EventDto } from '../events/events.dto.js';
import type { WebhookDeliveryDto } from './webhook-endpoint.dto.js';
import { table } from '../platform/database/table.js';

const WEBHOOK_DELIVERIES = table('webhook_deliveries');
const WEBHOOK_FANOUT = table('webhook_fanout');

export const DELIVERY_STATES = ['pending', 'succeeded', 'failed'] as const;

// Qualified by `d.` (every query names the table `d`): the output column `id` is text, and a
// page must sort by the number.
const COLUMNS = `d.id::text AS id, d.endpoint_id, d.event_id, d.event_type, d.state, d.attempts, d.last_status, d.last_error,
  d.next_attempt_at, d.created_at, d.delivered_at`;

export const WEBHOOK_DELIVERY_LIST = listSpec({
  from: 'webhook_deliveries d',
  alias: 'd',
  select: COLUMNS,
  sort: ['id', 'created_at'],
  defaultSort: 'id:desc',
  filters: { state: { enum: DELIVERY_STATES }, event_type: 'string' },
});

/** A delivery to attempt: its event as sent, and how many attempts came before. */
export interface DueDelivery {
  readonly id: string;
  readonly event_id: string;
  readonly payload: EventDto;
  readonly attempts: number;
  readonly retry_until: Date;
}

/** What one attempt ends in: delivered, another attempt at `next_attempt_at`, or failed for good. */
export interface AttemptRecord {
  readonly id: string;
  readonly state: 'pending' | 'succeeded' | 'failed';
  readonly status: number | null;
  readonly error: string | null;
  readonly next_attempt_at: Date | null;
}

/** One new delivery of an event to an endpoint. */
export interface NewDelivery {
  readonly endpoint_id: number;
  readonly event: EventDto;
}

/** The delivery log, which is also the retry schedule (one row per event and endpoint). */
@Injectable()
export class WebhookDeliveriesRepository {
  /**
   * Creates deliveries (an event reaches an endpoint once), due now, or at the next probe of an
   * endpoint that is failing; answers each endpoint that got new ones with when they are due.
   */
  async insert(tx: Tx, deliveries: readonly NewDelivery[]): Promise<Map<number, Date>> {
    const due = new Map<number, Date>();
    if (deliveries.length === 0) return due;
    const rows = await tx.write<{ endpoint_id: number; next_attempt_at: Date }[]>(
      WEBHOOK_DELIVERIES,
      `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, payload, next_attempt_at)
       SELECT d.endpoint_id, d.payload->>'id', d.payload->>'type', d.payload, GREATEST(now(), f.next_probe_at)
       FROM unnest($1::bigint[], $2::jsonb[]) WITH ORDINALITY AS d(endpoint_id, payload, ord)
       LEFT JOIN webhook_endpoint_failures f ON f.endpoint_id = d.endpoint_id
       ORDER BY d.ord
       ON CONFLICT (endpoint_id, event_id) DO NOTHING
       RETURNING endpoint_id, next_attempt_at`,
      [
        deliveries.map((delivery) => delivery.endpoint_id),
        deliveries.map((delivery) => JSON.stringify(delivery.event)),
      ],
    );
    for (const row of rows) {
      const id = Number(row.endpoint_id);
      const earliest = due.get(id);
      if (earliest === undefined || row.next_attempt_at < earliest) due.set(id, row.next_attempt_at);
    }
    return due;
  }

  /**
   * Up to `limit` deliveries of the endpoint that are due, taken for `leaseSeconds`: their next
   * attempt moves past the lease, so if this worker dies they come due again on their own, and
   * another worker skips them meanwhile.
   */
  async claimDue(
    tx: Tx,
    endpointId: number,
    claim: string,
    limit: number,
    leaseSeconds: number,
  ): Promise<DueDelivery[]> {
    // An UPDATE answers [rows, count]. Only a claim that took something changed the log (an idle
    // run looks often), so only that one makes the deliveries' list pages unusable.
    const [rows] = await tx.write<[DueDelivery[], number]>(
      WEBHOOK_DELIVERIES,
      `UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => $3), claim = $4
       FROM (SELECT id FROM webhook_deliveries
             WHERE endpoint_id = $1 AND state = 'pending' AND next_attempt_at <= now()
             ORDER BY attempts, next_attempt_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) due
       WHERE d.id = due.id
       RETURNING d.id::text AS id, d.event_id, d.payload, d.attempts, d.retry_until`,
      [endpointId, limit, leaseSeconds, claim],
      ([claimed]) => claimed.length > 0,
    );
    return rows;
  }

  /**
   * Records attempts' outcomes, one statement for the batch. Only deliveries still held by this
   * claim change: one ended meanwhile (its endpoint deleted or deactivated) or queued again by
   * hand keeps what happened to it since.
   */
  async record(tx: Tx, claim: string, attempts: readonly AttemptRecord[]): Promise<void> {
    if (attempts.length === 0) return;
    await tx.write(
      WEBHOOK_DELIVERIES,
      `UPDATE webhook_deliveries d SET
         state = a.state, attempts = d.attempts + 1, last_status = a.status, last_error = a.error,
         next_attempt_at = a.next_attempt_at, claim = NULL,
         delivered_at = CASE WHEN a.state = 'succeeded' THEN now() ELSE d.delivered_at END
       FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[], $5::timestamptz[]) AS a(id, state, status, error, next_attempt_at)
       WHERE d.id = a.id AND d.claim = $6 AND d.state = 'pending'`,
      [
        attempts.map((attempt) => attempt.id),
        attempts.map((attempt) => attempt.state),
        attempts.map((attempt) => attempt.status),
        attempts.map((attempt) => attempt.error),
        attempts.map((attempt) => attempt.next_attempt_at),
        claim,
      ],
    );
  }

  /** Claimed but not attempted: due again now, still pending, no attempt counted. */
  async release(tx: Tx, claim: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await tx.write(
      WEBHOOK_DELIVERIES,
      `UPDATE webhook_deliveries SET next_attempt_at = now(), claim = NULL
       WHERE id = ANY($1::bigint[]) AND claim = $2 AND state = 'pending'`,
      [ids, claim],
    );
  }

  /** Ends the endpoint's pending deliveries without an attempt (deleted or disabled endpoint). */
  async failPending(tx: Tx, endpointId: number, error: string): Promise<number> {
    const [, count] = await tx.write<[unknown[], number]>(
      WEBHOOK_DELIVERIES,
      `UPDATE webhook_deliveries SET state = 'failed', last_error = $2, next_attempt_at = NULL, claim = NULL
       WHERE endpoint_id = $1 AND state = 'pending'`,
      [endpointId, error],
    );
    return count;
  }

  /** When the endpoint's next pending delivery is due, if it has one. */
  async nextDue(db: Tx['db'], endpointId: number): Promise<Date | undefined> {
    const [row] = await db.query<{ at: Date | null }[]>(
      "SELECT min(next_attempt_at) AS at FROM webhook_deliveries WHERE endpoint_id = $1 AND state = 'pending'",
      [endpointId],
    );
    return row?.at ?? undefined;
  }

  /** Endpoints with a delivery due now (the sweep's safety net for lost jobs and ended leases). */
  async endpointsDue(db: Tx['db']): Promise<number[]> {
    const rows = await db.query<{ endpoint_id: string }[]>(
      `SELECT DISTINCT d.endpoint_id FROM webhook_deliveries d
       LEFT JOIN webhook_endpoint_failures f ON f.endpoint_id = d.endpoint_id
       WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND (f.next_probe_at IS NULL OR f.next_probe_at <= now())`,
    );
    return rows.map((row) => Number(row.endpoint_id));
  }

  /** Whether the endpoint ever had a delivery (its log stays readable after it was deleted). */
  async anyFor(db: Tx['db'], endpointId: number): Promise<boolean> {
    const rows = await db.query<unknown[]>('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 LIMIT 1', [
      endpointId,
    ]);
    return rows.length > 0;
  }

  /** The delivery of one event to one endpoint, as the log shows it. */
  async byEvent(tx: Tx, endpointId: number, eventId: string): Promise<WebhookDeliveryDto> {
    const [row] = await tx.db.query<WebhookDeliveryDto[]>(
      `SELECT ${COLUMNS} FROM webhook_deliveries d WHERE d.endpoint_id = $1 AND d.event_id = $2`,
      [endpointId, eventId],
    );
    if (row === undefined) throw new Error(`delivery of ${eventId} to endpoint ${endpointId} not found`);
    return row;
  }

  /** The delivery under a row lock; 404 when it does not exist. */
  async lock(tx: Tx, id: number): Promise<WebhookDeliveryDto & { endpoint_id: number }> {
    const [row] = await tx.db.query<(WebhookDeliveryDto & { endpoint_id: string })[]>(
      `SELECT ${COLUMNS} FROM webhook_deliveries d WHERE d.id = $1 FOR UPDATE`,
      [id],
    );
    if (row === undefined) throw ApiError.notFound('WEBHOOK_DELIVERY_NOT_FOUND', id);
    return { ...row, endpoint_id: Number(row.endpoint_id) };
  }

  /** Due again now, with at least one more attempt (a failed one gets exactly one). */
  async requeue(tx: Tx, id: number): Promise<WebhookDeliveryDto> {
    const [rows] = await tx.write<[WebhookDeliveryDto[], number]>(
      WEBHOOK_DELIVERIES,
      `UPDATE webhook_deliveries d SET state = 'pending', next_attempt_at = now(), retry_until = GREATEST(retry_until, now()),
         claim = NULL
       WHERE d.id = $1 RETURNING ${COLUMNS}`,
      [id],
    );
    const row = rows[0];
    if (row === undefined) throw ApiError.notFound('WEBHOOK_DELIVERY_NOT_FOUND', id);
    return row;
  }

  /** The fan-out's cursor on the feed, locked; undefined while another instance's step holds it. */
  async fanoutCursor(tx: Tx): Promise<string | undefined> {
    const [row] = await tx.db.query<{ after: string }[]>(
      'SELECT after FROM webhook_fanout WHERE id = 1 FOR UPDATE SKIP LOCKED',
    );
    return row?.after;
  }

  async moveFanout(tx: Tx, after: string): Promise<void> {
    await tx.write(WEBHOOK_FANOUT, 'UPDATE webhook_fanout SET after = $1 WHERE id = 1', [after]);
  }

  /** Up to `batch` deliveries older than the retention; answers how many went. */
  async purge(tx: Tx, retentionDays: number, batch = 10_000): Promise<number> {
    const [, count] = await tx.write<[unknown[], number]>(
      WEBHOOK_DELIVERIES,
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE created_at < now() - make_interval(days => $1) AND state <> 'pending' LIMIT $2)`,
      [retentionDays, batch],
    );
    return count;
  }
}
