import { Injectable } from '@nestjs/common';
import { RESOURCE_ID } from '../audit/audit-events.repository.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';

/** One event as the feed shows it (part 6.12). */
export interface EventRow {
  readonly id: string;
  readonly type: string;
  readonly occurred_at: Date;
  readonly actor_id: number | null;
  readonly request_id: string | null;
  readonly resource_type: string | null;
  readonly resource_id: number | string | null;
  readonly data: object;
}

/** A new event written by a worker (audit events reach the feed by trigger). */
export interface NewEvent {
  readonly type: string;
  readonly resource_type: string | null;
  readonly resource_id: string | null;
  readonly data: object;
}

/** `<xid>-<id>`, each zero-padded to 20 digits: plain string order is feed order. */
export const EVENT_ID = /^(\d{20})-(\d{20})$/;

const ID = `lpad(xid::text, 20, '0') || '-' || lpad(id::text, 20, '0')`;

@Injectable()
export class EventsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  /**
   * Events after the cursor, in (transaction, id) order, only from transactions older than the
   * oldest one still running: a transaction that took a lower id but commits later is waited
   * for, never skipped, so nothing can appear behind what a reader was already given.
   */
  after(
    cursor: { xid: string; id: string } | undefined,
    types: readonly string[] | undefined,
    limit: number,
  ): Promise<EventRow[]> {
    return this.uow.reader.query<EventRow[]>(
      `SELECT ${ID} AS id, type, occurred_at, actor_id, request_id, resource_type, ${RESOURCE_ID}, data
       FROM events
       WHERE (xid, id) > ($1::xid8, $2::bigint)
         AND xid < pg_snapshot_xmin(pg_current_snapshot())
         AND ($3::text[] IS NULL OR type = ANY($3::text[]))
       ORDER BY xid, id
       LIMIT $4`,
      [cursor?.xid ?? '0', cursor?.id ?? '0', types === undefined ? null : [...types], limit],
    );
  }

  /** Appends events in the caller's transaction (workers' events: push deliveries). */
  async append(tx: Tx, actorId: number | null, requestId: string | null, events: readonly NewEvent[]): Promise<void> {
    if (events.length === 0) return;
    tx.wrote('events');
    await tx.db.query(
      `INSERT INTO events (type, actor_id, request_id, resource_type, resource_id, data)
       SELECT e.type, $1, $2, e.resource_type, e.resource_id, e.data
       FROM unnest($3::text[], $4::text[], $5::text[], $6::jsonb[]) WITH ORDINALITY AS e(type, resource_type, resource_id, data, ord)
       ORDER BY e.ord`,
      [
        actorId,
        requestId,
        events.map((event) => event.type),
        events.map((event) => event.resource_type),
        events.map((event) => event.resource_id),
        events.map((event) => JSON.stringify(event.data)),
      ],
    );
  }

  /** Events older than the retention (EVENT_RETENTION_DAYS); answers how many went. */
  async purge(tx: Tx, retentionDays: number): Promise<number> {
    tx.wrote('events');
    const [, count] = await tx.db.query<[unknown[], number]>(
      `DELETE FROM events WHERE occurred_at < now() - make_interval(days => $1)`,
      [retentionDays],
    );
    return count;
  }
}
