import { Injectable } from '@nestjs/common';
import { resourceIdJson } from '../platform/audit/audit-trail.repository.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { table } from '../platform/database/table.js';

const EVENTS = table('events');
/** The feed position of the last event retention deleted; (0, 0) while none was. */
const EVENTS_PURGE_HORIZON = table('events_purge_horizon');

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

/** A place in the feed, as the database orders it: (commit position, id). */
export interface FeedPosition {
  readonly seq: string;
  readonly id: string;
}

/** A page of the feed with what the same snapshot says about the whole feed. */
export interface FeedPage {
  readonly rows: EventRow[];
  /** The highest position visible: every event at or below it is final. */
  readonly top: string;
  /** The last position handed out (a cursor past it is another database's). */
  readonly issued: string;
  /** The last event retention deleted ((0, 0) while none was): a cursor below it has a gap. */
  readonly purged: FeedPosition;
}

/**
 * The feed's commit lock (the advisory lock of the commit step, migration EventsCommitOrder):
 * whoever holds it has taken the next position and is not visible yet, so every later commit
 * of events waits behind it.
 */
const COMMIT_LOCK = 7306020240617260001n;

@Injectable()
export class EventsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  /**
   * Events after the cursor in feed order: (commit position, id). A transaction's events get
   * their position as it commits, under one lock held until the commit is visible, so positions
   * are commit order and nothing can appear behind what a reader was already given. With the
   * page come the highest position visible (every event at or below it is final) and the last
   * one handed out (a cursor past it belongs to another database, or to this one before a
   * restore), and how far retention purged, read in the same statement, so from the same
   * snapshot as the page.
   */
  async after(
    cursor: FeedPosition | undefined,
    types: readonly string[] | undefined,
    limit: number,
    db: Tx['db'] = this.uow.reader,
  ): Promise<FeedPage> {
    // Each type is its own index range (events_type_seq_idx) merged in order: one `type = ANY`
    // scan would read and sort every event of those types after the cursor.
    const page =
      types === undefined
        ? `SELECT e.* FROM events e WHERE (e.seq, e.id) > ($1::bigint, $2::bigint) ORDER BY e.seq, e.id LIMIT $3`
        : `SELECT x.* FROM unnest($4::text[]) AS t(type), LATERAL (
             SELECT e.* FROM events e WHERE e.type = t.type AND (e.seq, e.id) > ($1::bigint, $2::bigint)
             ORDER BY e.seq, e.id LIMIT $3) x
           ORDER BY x.seq, x.id LIMIT $3`;
    const rows = await db.query<
      (Omit<EventRow, 'seq'> & {
        top: string | null;
        issued: string;
        purged_seq: string;
        purged_id: string;
        seq: string | null;
      })[]
    >(
      `WITH h AS (SELECT (SELECT max(seq) FROM events)::text AS top, (SELECT last_value FROM events_commit_seq)::text AS issued,
                         r.seq::text AS purged_seq, r.id::text AS purged_id
                  FROM events_purge_horizon r),
            page AS (${page})
       SELECT h.top, h.issued, h.purged_seq, h.purged_id, p.seq::text AS seq,
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
      purged: { seq: first?.purged_seq ?? '0', id: first?.purged_id ?? '0' },
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
   * Up to `batch` events older than the retention (EVENT_RETENTION_DAYS), from the start of the
   * feed and up to its first younger event; answers how many went. Purging a prefix only (an
   * event of a long transaction can be older than one committed before it) keeps every event
   * after the horizon, which moves to the last one deleted: a cursor below it is told so (410)
   * and resuming from the horizon misses nothing still kept. The caller repeats it in short
   * transactions: one DELETE of a month's backlog could outlast the statement timeout and hold
   * its locks for as long.
   */
  async purge(tx: Tx, retentionDays: number, batch = 10_000): Promise<number> {
    const [row] = await tx.write<{ deleted: number }[]>(
      [EVENTS, EVENTS_PURGE_HORIZON],
      `WITH head AS (
         SELECT seq, id, occurred_at FROM events WHERE seq IS NOT NULL ORDER BY seq, id LIMIT $2),
       kept AS (
         SELECT seq, id FROM head WHERE occurred_at >= now() - make_interval(days => $1) ORDER BY seq, id LIMIT 1),
       gone AS (
         DELETE FROM events e USING head h
         WHERE e.seq = h.seq AND e.id = h.id AND NOT EXISTS (SELECT 1 FROM kept k WHERE (h.seq, h.id) >= (k.seq, k.id))
         RETURNING e.seq, e.id),
       last AS (SELECT seq, id FROM gone ORDER BY seq DESC, id DESC LIMIT 1),
       moved AS (
         UPDATE events_purge_horizon r SET seq = last.seq, id = last.id FROM last
         WHERE (last.seq, last.id) > (r.seq, r.id) RETURNING r.seq)
       SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM moved) AS moved`,
      [retentionDays, batch],
    );
    return row?.deleted ?? 0;
  }

  /**
   * Seconds since the transaction holding the feed back began (0 when none does): the one that
   * holds the commit lock, which has taken its feed position but is not visible yet, so no event
   * committed after it can be read. A transaction that merely wrote events holds nothing back (it
   * takes its position as it commits). Advisory locks are per database: other databases on the
   * server do not count.
   */
  async lagSeconds(): Promise<number> {
    const [row] = await this.uow.reader.query<{ lag: number | null }[]>(
      `SELECT round(extract(epoch FROM clock_timestamp() - min(a.xact_start)), 3)::float8 AS lag
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid`,
      [COMMIT_LOCK.toString()],
    );
    return Math.max(0, row?.lag ?? 0);
  }
}
