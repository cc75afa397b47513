import { Injectable } from '@nestjs/common';
import { resourceIdJson } from '../platform/audit/audit-trail.repository.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { table } from '../platform/database/table.js';

const EVENTS = table('events');

/** One event as the feed shows it (part 6.12), with its commit position. */
export interface EventRow {
  readonly id: string;
  readonly seq: string;
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

/** `<position>-<id>`, each zero-padded to 20 digits: plain string order is feed order. */
export const EVENT_ID = /^(\d{20})-(\d{20})$/;

@Injectable()
export class EventsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  /**
   * Events after the cursor in feed order: (commit position, id). A transaction's events get
   * their position as it commits, under one lock held until the commit is visible, so positions
   * are commit order and nothing can appear behind what a reader was already given. With the
   * page come the highest position visible (every event at or below it is final) and the last
   * one handed out (a cursor past it belongs to another database, or to this one before a
   * restore), read in the same statement, so from the same snapshot as the page.
   */
  async after(
    cursor: { seq: string; id: string } | undefined,
    types: readonly string[] | undefined,
    limit: number,
    db: Tx['db'] = this.uow.reader,
  ): Promise<{ rows: EventRow[]; top: string; issued: string }> {
    // Each type is its own index range (events_type_seq_idx) merged in order: one `type = ANY`
    // scan would read and sort every event of those types after the cursor.
    const page =
      types === undefined
        ? `SELECT e.* FROM events e WHERE (e.seq, e.id) > ($1::bigint, $2::bigint) ORDER BY e.seq, e.id LIMIT $3`
        : `SELECT x.* FROM unnest($4::text[]) AS t(type), LATERAL (
             SELECT e.* FROM events e WHERE e.type = t.type AND (e.seq, e.id) > ($1::bigint, $2::bigint)
             ORDER BY e.seq, e.id LIMIT $3) x
           ORDER BY x.seq, x.id LIMIT $3`;
    const rows = await db.query<(Omit<EventRow, 'seq'> & { top: string | null; issued: string; seq: string | null })[]>(
      `WITH h AS (SELECT (SELECT max(seq) FROM events)::text AS top, (SELECT last_value FROM events_commit_seq)::text AS issued),
            page AS (${page})
       SELECT h.top, h.issued, p.seq::text AS seq,
              lpad(p.seq::text, 20, '0') || '-' || lpad(p.id::text, 20, '0') AS id,
              p.type, p.occurred_at, p.actor_id, p.request_id, p.resource_type,
              ${resourceIdJson('p.resource_id')},
              p.data
       FROM h LEFT JOIN page p ON true
       ORDER BY p.seq, p.id`,
      [cursor?.seq ?? '0', cursor?.id ?? '0', limit, ...(types === undefined ? [] : [[...types]])],
    );
    const first = rows[0];
    return {
      rows: rows.filter((row): row is typeof row & { seq: string } => row.seq !== null),
      top: first?.top ?? '0',
      issued: first?.issued ?? '0',
    };
  }

  /** Appends events in the caller's transaction (workers' events: push deliveries). */
  async append(tx: Tx, actorId: number | null, requestId: string | null, events: readonly NewEvent[]): Promise<void> {
    if (events.length === 0) return;
    await tx.write(
      EVENTS,
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

  /**
   * Up to `batch` events older than the retention (EVENT_RETENTION_DAYS); answers how many went.
   * The caller repeats it in short transactions: one DELETE of a month's backlog could outlast
   * the statement timeout and hold its locks for as long.
   */
  async purge(tx: Tx, retentionDays: number, batch = 10_000): Promise<number> {
    const [, count] = await tx.write<[unknown[], number]>(
      EVENTS,
      `DELETE FROM events WHERE (xid, id) IN (
         SELECT xid, id FROM events WHERE occurred_at < now() - make_interval(days => $1) LIMIT $2)`,
      [retentionDays, batch],
    );
    return count;
  }
}
