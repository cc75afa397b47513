import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../platform/http/api-error.js';
import { FeedResponse } from '../platform/http/responses.js';
import { EVENT_TYPE, type EventDto, type EventsQueryDto } from './events.dto.js';
import { expiredCursor, nextAfter, parseCursor, presentEvent } from './event-cursor.js';
import { EventsRepository } from './events.repository.js';

/** How often a long poll (`wait`) looks again. */
const POLL_MS = 200;
/** Calls that may wait at once on one instance (each looks again every POLL_MS). */
const MAX_WAITING = 100;

@Injectable()
export class EventsService implements BeforeApplicationShutdown {
  private closing = false;
  private waiting = 0;

  constructor(private readonly events: EventsRepository) {}

  /**
   * `GET /events`: the next events after the cursor, waiting up to `wait` seconds for a first one
   * while the caller is still there. `next_after` is the last event given, or, when the page is
   * not full, past the highest position visible, below which every event is final (so a rare
   * `types` filter does not rescan the same range on every call).
   */
  async feed(query: EventsQueryDto, gone: () => boolean = () => false): Promise<FeedResponse<EventDto>> {
    const cursor = parseCursor(query.after);
    const types = parseTypes(query.types);
    const limit = query.limit ?? 100;
    // Waiting calls are bounded per instance: past the bound a call answers at once.
    const waitMs = this.waiting < MAX_WAITING ? (query.wait ?? 0) * 1000 : 0;
    const deadline = Date.now() + waitMs;
    this.waiting += 1;
    try {
      for (;;) {
        const page = await this.events.after(cursor, types, limit);
        if (cursor !== undefined && BigInt(cursor.seq) > BigInt(page.issued))
          throw ApiError.field(
            'after',
            'ahead',
            'after is ahead of this feed: an event id from another database, or from before a restore',
          );
        // Checked on every look: retention may purge past the cursor while a call waits.
        const expired = expiredCursor(cursor, page.purged);
        if (expired !== undefined) throw expired;
        // A shutting-down instance answers what it has instead of holding the drain for 30 s.
        if (page.rows.length > 0 || Date.now() + POLL_MS > deadline || this.closing || gone())
          return new FeedResponse(page.rows.map(presentEvent), nextAfter(query.after, page, limit));
        await sleep(POLL_MS);
      }
    } finally {
      this.waiting -= 1;
    }
  }

  /** Before the server drains: waiting polls answer now instead of holding the drain. */
  beforeApplicationShutdown(): void {
    this.closing = true;
  }
}

function parseTypes(raw: string | undefined): string[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const types = [...new Set(raw.split(',').map((type) => type.trim()))];
  const bad = types.find((type) => !EVENT_TYPE.test(type));
  if (bad !== undefined)
    throw ApiError.field(
      'types',
      'format',
      `types must be event types such as authority.revoke (not "${bad.slice(0, 60)}")`,
    );
  if (types.length > 100) throw ApiError.field('types', 'max_size', 'types may name at most 100 types');
  return types;
}
