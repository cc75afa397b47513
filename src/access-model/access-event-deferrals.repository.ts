import { Injectable } from '@nestjs/common';
import { EVENTS } from '../platform/audit/audit-trail.repository.js';
import { table } from '../platform/database/table.js';
import type { Tx } from '../platform/database/unit-of-work.js';
import type { AccessChange } from './access-changes.js';

const DEFERRALS = table('access_event_deferrals');
/** Changes per stored chunk: each chunk's events are appended in one transaction of the job. */
export const DEFERRED_CHUNK = 1000;

/**
 * What a chunk stores: one change for each of its users. A fan-out's changes differ mostly by
 * their user alone (100 000 members losing one right are 100 000 changes alike but for
 * `user_id`); stored one object each they were some 20 MB of JSON for the write to send and
 * PostgreSQL to parse, two seconds of a 100 000-member change. A chunk stored before this form
 * holds plain changes, and is read as it is.
 */
type StoredChange = Omit<AccessChange, 'user_id'> & { readonly users: readonly number[] };

/** The changes grouped by all but their user, cut into chunks of at most `DEFERRED_CHUNK` changes each. */
export function storedChunks(changes: readonly AccessChange[]): StoredChange[][] {
  const alike = new Map<string, { readonly change: Omit<AccessChange, 'user_id'>; readonly users: number[] }>();
  for (const { user_id, ...change } of changes) {
    const key = `${change.device_id}/${change.permission_code}/${change.change}/${change.decided_by}/${change.group_id}`;
    const known = alike.get(key);
    if (known === undefined) alike.set(key, { change, users: [user_id] });
    else known.users.push(user_id);
  }
  const chunks: StoredChange[][] = [];
  let chunk: StoredChange[] = [];
  let room = DEFERRED_CHUNK;
  for (const { change, users } of alike.values())
    for (let start = 0; start < users.length;) {
      const taken = users.slice(start, start + room);
      chunk.push({ ...change, users: taken });
      start += taken.length;
      room -= taken.length;
      if (room === 0) {
        chunks.push(chunk);
        chunk = [];
        room = DEFERRED_CHUNK;
      }
    }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/** A stored chunk's changes, one per user, in the order stored. */
export function storedChanges(stored: readonly (StoredChange | AccessChange)[]): AccessChange[] {
  return stored.flatMap((item) => {
    if (!('users' in item)) return [item];
    const { users, ...change } = item;
    return users.map((user_id) => ({ user_id, ...change }));
  });
}

/** One stored chunk, with what its events carry: the write's event (their cause) and its time. */
export interface DeferredChunk {
  readonly id: number;
  readonly actor_id: number | null;
  readonly request_id: string | null;
  readonly changes: AccessChange[];
  /** The write's own first event id; null when the write made none (then `cause` is null, as at commit). */
  readonly cause: string | null;
  readonly occurred_at: string;
}

/** Access changes stored by their write and appended later (migration `access-event-deferrals`). */
@Injectable()
export class AccessEventDeferralsRepository {
  /**
   * Stores the changes in chunks, in the write's transaction, and marks the write's own (first)
   * event with how many were deferred (`data.access_changes_deferred`, summed over the watches of
   * one transaction).
   */
  async defer(tx: Tx, by: { actor_id: number | null; request_id: string | null }, changes: readonly AccessChange[]) {
    const chunks = storedChunks(changes);
    await tx.write(
      DEFERRALS,
      `INSERT INTO access_event_deferrals (actor_id, request_id, changes)
       SELECT $1, $2, c.chunk FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS c(chunk, ord) ORDER BY c.ord`,
      [by.actor_id, by.request_id, JSON.stringify(chunks)],
    );
    await tx.write(
      EVENTS,
      `UPDATE events SET data = data || jsonb_build_object('access_changes_deferred',
         coalesce((data->>'access_changes_deferred')::bigint, 0) + $1)
       WHERE xid = pg_current_xact_id() AND id = (SELECT min(id) FROM events
         WHERE xid = pg_current_xact_id() AND type NOT IN ('access.gained', 'access.lost'))`,
      [changes.length],
    );
  }

  /**
   * The oldest chunk no other transaction holds, under its row lock (committed writes' chunks
   * only: an uncommitted write's rows are invisible), or undefined when none is left.
   */
  async next(tx: Tx): Promise<DeferredChunk | undefined> {
    const [row] = await tx.db.query<
      (Omit<DeferredChunk, 'id' | 'changes'> & { id: string; changes: (StoredChange | AccessChange)[] })[]
    >(
      `SELECT d.id, d.actor_id::int, d.request_id, d.changes, c.cause, coalesce(c.occurred_at, d.created_at)::text AS occurred_at
       FROM (SELECT * FROM access_event_deferrals ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) d
       LEFT JOIN LATERAL (
         SELECT lpad(e.seq::text, 20, '0') || '-' || lpad(e.id::text, 20, '0') AS cause, e.occurred_at
         FROM events e WHERE e.xid = d.xid AND e.type NOT IN ('access.gained', 'access.lost') AND e.seq IS NOT NULL
         ORDER BY e.id LIMIT 1) c ON true`,
    );
    return row === undefined ? undefined : { ...row, id: Number(row.id), changes: storedChanges(row.changes) };
  }

  async done(tx: Tx, id: number): Promise<void> {
    await tx.write(DEFERRALS, 'DELETE FROM access_event_deferrals WHERE id = $1', [id]);
  }
}
