import { ApiError } from '../platform/http/api-error.js';
import type { EventDto } from './events.dto.js';
import { EVENT_ID, type EventRow, type FeedPosition } from './events.repository.js';

const MAX_ID = 2n ** 63n - 1n;

/** An event id as the database's (position, id) pair; 400 for one no event can have. */
export function parseCursor(after: string | undefined): FeedPosition | undefined {
  // An empty `after=` (a stored `next_after` of null sent back) is the start of the feed.
  if (after === undefined || after === '') return undefined;
  const match = EVENT_ID.exec(after);
  const seq = BigInt(match?.[1] ?? '-1');
  const id = BigInt(match?.[2] ?? '-1');
  if (seq < 0n || seq > MAX_ID || id < 0n || id > MAX_ID)
    throw ApiError.field('after', 'format', 'after must be an event id from this feed');
  return { seq: String(seq), id: String(id) };
}

const pad = (value: bigint): string => value.toString().padStart(20, '0');

/**
 * 410 when retention deleted an event after the cursor (the cursor is below the last event it
 * deleted): reading on would silently skip it. `oldest_after` is that last deleted event, just
 * before the oldest one kept, from which reading is whole again. A cursor at or past it, or none
 * (the start of the feed), reads on; so does any cursor while nothing was ever purged.
 */
export function expiredCursor(cursor: FeedPosition | undefined, purged: FeedPosition): ApiError | undefined {
  if (cursor === undefined) return undefined;
  const [seq, purgedSeq] = [BigInt(cursor.seq), BigInt(purged.seq)];
  if (seq > purgedSeq || (seq === purgedSeq && BigInt(cursor.id) >= BigInt(purged.id))) return undefined;
  return new ApiError(
    'EVENT_CURSOR_EXPIRED',
    'Events after this cursor were past their retention (EVENT_RETENTION_DAYS) and are deleted; resume from details.oldest_after',
    { oldest_after: `${pad(purgedSeq)}-${pad(BigInt(purged.id))}` },
  );
}

/** The last event given; past a page that was not full, the highest position visible if that is further. */
export function nextAfter(
  after: string | undefined,
  page: { rows: readonly EventRow[]; top: string },
  limit: number,
): string | null {
  const last = page.rows.at(-1)?.id ?? (after === '' ? undefined : after);
  const top = BigInt(page.top);
  if (page.rows.length >= limit || top < 1n) return last ?? null;
  const final = `${pad(top)}-${pad(MAX_ID)}`;
  return last === undefined || final > last ? final : last;
}

export function presentEvent(row: EventRow): EventDto {
  return {
    id: row.id,
    type: row.type,
    occurred_at: row.occurred_at.toISOString(),
    actor_id: row.actor_id === null ? null : Number(row.actor_id),
    request_id: row.request_id,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    data: row.data,
  };
}
