import { Injectable } from '@nestjs/common';
import { CacheAside } from '../platform/cache/cache-aside.js';
import { cacheKeys } from '../platform/cache/cache-keys.js';
import { objectOf } from '../platform/cache/decode.js';
import type { CacheEntry } from '../platform/cache/cache-store.js';
import { CacheEntries } from '../platform/cache/cache-entries.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { ReadCountsDto } from './read-state.dto.js';

interface CachedCounts extends ReadCountsDto {
  /** When the snoozed count next changes by itself (the earliest future snoozed_until). */
  readonly next_change_at: string | null;
}

/** A (user, conversation or all) pair whose counts a write changed. */
export interface CountsScope {
  readonly user_id: number;
  readonly conversation_id: string | null;
}

const ALL = '*';

const DECODE_COUNTS = objectOf<CachedCounts>({
  total: 'number',
  unread: 'number',
  archived: 'number',
  pinned: 'number',
  snoozed: 'number',
  next_change_at: 'string|null',
});

/**
 * `GET /message-read-state/counts`, a cached projection per (user, conversation). Versioned by
 * the user's `read_counts` version, which every read-state or message write of that user bumps
 * in its transaction; the write rebuilds the user's overall entry and the conversation's after
 * commit, so counts are never stale after a write's response. Snoozes that end by themselves
 * are handled by remembering when the next one ends and reloading past it.
 */
@Injectable()
export class ReadCountsRepository {
  private readonly cached: CacheAside<CachedCounts, string>;

  constructor(
    private readonly uow: UnitOfWork,
    cache: CacheEntries,
  ) {
    this.cached = new CacheAside<CachedCounts, string>(
      cache,
      (key) => cacheKeys.readCounts(key),
      (key) => this.load(key),
      DECODE_COUNTS,
    );
  }

  async counts(
    userId: number,
    conversationId: string | null,
  ): Promise<{ counts: ReadCountsDto; cache: 'hit' | 'miss' | 'bypass' }> {
    const key = `${userId}:${conversationId ?? ALL}`;
    let read = await this.cached.get(key);
    if (read?.value.next_change_at != null && Date.parse(read.value.next_change_at) <= Date.now()) {
      // A snooze ended since the entry was built: rebuild it now.
      const entry = await this.load(key);
      await this.cached.refresh(key, entry);
      const value = DECODE_COUNTS(entry.json);
      read = value === undefined ? undefined : { value, entry, cache: 'miss' };
    }
    if (read === undefined) throw new Error('counts projection could not be built');
    const { next_change_at: _next, ...counts } = read.value;
    return { counts, cache: read.cache };
  }

  /** Inside the write's transaction: bump the users' versions; after commit, rebuild the touched entries. */
  changed(tx: Tx, scopes: readonly CountsScope[]): Promise<void> {
    tx.bumpProjections(
      'read_counts',
      scopes.map((scope) => scope.user_id),
    );
    const keys = new Set(
      scopes.flatMap((scope) => [
        `${scope.user_id}:${ALL}`,
        ...(scope.conversation_id === null ? [] : [`${scope.user_id}:${scope.conversation_id}`]),
      ]),
    );
    tx.afterCommit(async () => {
      await Promise.all([...keys].map(async (key) => this.cached.refresh(key, await this.load(key))));
    });
    return Promise.resolve();
  }

  /** A triggered rebuild: every recipient's overall counts, in pages; answers how many entries were written. */
  async warm(): Promise<number> {
    let written = 0;
    for (let after = 0; ;) {
      const rows = await this.uow.reader.query<{ user_id: number }[]>(
        'SELECT DISTINCT user_id FROM message_read_state WHERE user_id > $1 ORDER BY user_id LIMIT 500',
        [after],
      );
      if (rows.length === 0) return written;
      const keys = rows.map((row) => `${row.user_id}:${ALL}`);
      await Promise.all(keys.map(async (key) => this.cached.refresh(key, await this.load(key))));
      written += keys.length;
      after = Number(rows[rows.length - 1]?.user_id ?? after);
    }
  }

  // One statement: the version and the counts come from the same snapshot.
  private async load(key: string): Promise<CacheEntry> {
    const separator = key.indexOf(':');
    const userId = Number(key.slice(0, separator));
    const conversation = key.slice(separator + 1);
    const conversationId = conversation === ALL ? null : conversation;
    const [row] = await this.uow.reader.query<
      (Omit<CachedCounts, 'user_id' | 'conversation_id'> & { version: number })[]
    >(
      `SELECT coalesce((SELECT version FROM projection_versions WHERE scope = 'read_counts' AND id = $1), 1) AS version,
              count(*)::int AS total,
              (count(*) FILTER (WHERE NOT rs.is_read))::int AS unread,
              (count(*) FILTER (WHERE rs.is_archived))::int AS archived,
              (count(*) FILTER (WHERE rs.is_pinned))::int AS pinned,
              (count(*) FILTER (WHERE rs.snoozed_until > now()))::int AS snoozed,
              to_char(min(rs.snoozed_until) FILTER (WHERE rs.snoozed_until > now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS next_change_at
       FROM message_read_state rs JOIN inbox_messages m ON m.id = rs.message_id AND NOT m.is_deleted
       WHERE rs.user_id = $1 AND ($2::text IS NULL OR rs.conversation_id = $2)`,
      [userId, conversationId],
    );
    const counts: CachedCounts = {
      user_id: userId,
      conversation_id: conversationId,
      total: row?.total ?? 0,
      unread: row?.unread ?? 0,
      archived: row?.archived ?? 0,
      pinned: row?.pinned ?? 0,
      snoozed: row?.snoozed ?? 0,
      next_change_at: row?.next_change_at ?? null,
    };
    return { version: Number(row?.version ?? 1), deleted: false, json: JSON.stringify(counts) };
  }
}
