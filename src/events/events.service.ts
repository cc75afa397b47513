import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../common/api-error.js';
import { FeedResponse } from '../common/responses.js';
import type { EventDto, EventsQueryDto } from './events.dto.js';
import { EVENT_ID, EventsRepository, type EventRow } from './events.repository.js';

/** How often a long poll (`wait`) looks again. */
const POLL_MS = 200;
const TYPE = /^[a-z_]+\.[a-z_]+$/;

@Injectable()
export class EventsService implements BeforeApplicationShutdown {
  private closing = false;

  constructor(private readonly events: EventsRepository) {}

  /** `GET /events`: the next events after the cursor, waiting up to `wait` seconds for a first one. */
  async feed(query: EventsQueryDto): Promise<FeedResponse<EventDto>> {
    const cursor = parseCursor(query.after);
    const types = parseTypes(query.types);
    const deadline = Date.now() + (query.wait ?? 0) * 1000;
    for (;;) {
      const rows = await this.events.after(cursor, types, query.limit ?? 100);
      // A shutting-down instance answers what it has instead of holding the drain for 30 s.
      if (rows.length > 0 || Date.now() + POLL_MS > deadline || this.closing)
        return new FeedResponse(rows.map(present), rows.at(-1)?.id ?? query.after ?? null);
      await sleep(POLL_MS);
    }
  }

  /** Before the server drains: waiting polls answer now instead of holding the drain. */
  beforeApplicationShutdown(): void {
    this.closing = true;
  }
}

const MAX_XID = 2n ** 64n - 1n;
const MAX_ID = 2n ** 63n - 1n;

/** An event id as the database's (transaction, id) pair; 400 for one no event can have. */
function parseCursor(after: string | undefined): { xid: string; id: string } | undefined {
  if (after === undefined) return undefined;
  const match = EVENT_ID.exec(after);
  const xid = BigInt(match?.[1] ?? '-1');
  const id = BigInt(match?.[2] ?? '-1');
  if (xid < 0n || xid > MAX_XID || id < 0n || id > MAX_ID)
    throw ApiError.field('after', 'format', 'after must be an event id from this feed');
  return { xid: String(xid), id: String(id) };
}

function parseTypes(raw: string | undefined): string[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const types = [...new Set(raw.split(',').map((type) => type.trim()))];
  const bad = types.find((type) => !TYPE.test(type));
  if (bad !== undefined)
    throw ApiError.field(
      'types',
      'format',
      `types must be event types such as authority.revoke (not "${bad.slice(0, 60)}")`,
    );
  if (types.length > 100) throw ApiError.field('types', 'max_size', 'types may name at most 100 types');
  return types;
}

function present(row: EventRow): EventDto {
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
