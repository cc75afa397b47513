import { Injectable } from '@nestjs/common';
import { AuditService, type AuditAction } from '../platform/audit/audit.service.js';
import { ApiError } from '../platform/http/api-error.js';
import { assertIfMatch, type IfMatch } from '../platform/http/etag.js';
import { ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { NOW, withoutVersion } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { ReadCountsRepository, type CountsScope } from './read-counts.repository.js';
import type { ReadStateDto } from './read-state.dto.js';
import { ReadStateRepository, type ReadStateRow } from './read-state.repository.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

const MAX_SNOOZE_MS = 365 * 24 * 3600 * 1000;

/** The resource as sent, with `is_snoozed` judged now (a snooze ends by itself). */
function present(row: Omit<ReadStateRow, 'version'>): ReadStateDto {
  const { message_deleted: _deleted, ...state } = row;
  return { ...state, is_snoozed: state.snoozed_until !== null && Date.parse(String(state.snoozed_until)) > Date.now() };
}

type Flag = 'read' | 'archived' | 'pinned';
const FLAG_COLUMNS: Readonly<
  Record<
    Flag,
    { flag: 'is_read' | 'is_archived' | 'is_pinned'; at: 'read_at' | 'archived_at' | 'pinned_at'; action: AuditAction }
  >
> = {
  read: { flag: 'is_read', at: 'read_at', action: 'message_read_state.mark_read' },
  archived: { flag: 'is_archived', at: 'archived_at', action: 'message_read_state.archive' },
  pinned: { flag: 'is_pinned', at: 'pinned_at', action: 'message_read_state.pin' },
};

/** Message read state (part 6.8): rows of deleted messages are hidden everywhere. */
@Injectable()
export class ReadStateService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly counts: ReadCountsRepository,
    private readonly states: ReadStateRepository,
  ) {}

  list(query: Record<string, unknown>): Promise<ListResponse<ReadStateDto>> {
    return this.states.list<ReadStateRow, ReadStateDto>(query, undefined, (rows) => rows.map(present));
  }

  async get(id: number, prefetched?: Prefetched): Promise<ResourceResponse<ReadStateDto>> {
    const read = await this.states.read(id, prefetched);
    const row = read?.value;
    if (read === undefined || row === undefined || row.message_deleted === true)
      throw ApiError.notFound('READ_STATE_NOT_FOUND', id);
    return new ResourceResponse(present(row), { cache: read.cache, version: read.entry.version });
  }

  /** `mark-read`, `archive`, `pin`: set or clear one flag; repeating the current state changes nothing. */
  setFlag(id: number, flag: Flag, on: boolean, ifMatch: IfMatch): Promise<ResourceResponse<ReadStateDto>> {
    const { flag: column, at, action } = FLAG_COLUMNS[flag];
    return this.write(id, ifMatch, async (tx, before) => {
      if (before[column] === on) return before;
      const after = await this.states.patch(tx, id, {
        [column]: on,
        [at]: on ? NOW : null,
        updated_by: tx.actor,
      });
      await this.audit.record(tx, action, id, { before, changes: { [column]: [before[column], on] } });
      return after;
    });
  }

  /** `snooze`: a future time at most 365 days ahead (else 422), or null to unsnooze. */
  snooze(id: number, until: string | null, ifMatch: IfMatch): Promise<ResourceResponse<ReadStateDto>> {
    const at = until === null ? null : new Date(until);
    if (at !== null && (at.getTime() <= Date.now() || at.getTime() > Date.now() + MAX_SNOOZE_MS)) {
      throw new ApiError('SNOOZE_UNTIL_INVALID', 'until must be in the future and at most 365 days ahead', {
        until,
        max_days: 365,
      });
    }
    return this.write(id, ifMatch, async (tx, before) => {
      const current = before.snoozed_until === null ? null : new Date(before.snoozed_until).toISOString();
      if (current === (at?.toISOString() ?? null)) return before;
      const after = await this.states.patch(tx, id, { snoozed_until: at, updated_by: tx.actor });
      await this.audit.record(tx, 'message_read_state.snooze', id, {
        before,
        changes: { snoozed_until: [current, at?.toISOString() ?? null] },
      });
      return after;
    });
  }

  /** The recipients' counts changed (a new message): bump inside `tx`, rebuild after commit. */
  countsChanged(tx: Tx, scopes: readonly CountsScope[]): Promise<void> {
    return this.counts.changed(tx, scopes);
  }

  /** The recipient's row, created in the message's own transaction. */
  createFor(tx: Tx, message: { id: number; user_id: number; conversation_id: string | null }): Promise<void> {
    return this.states.createFor(tx, message);
  }

  /** Messages were deleted or restored: their read-state rows appear or disappear (see the repository). */
  messagesChanged(tx: Tx, messageIds: readonly number[]): Promise<void> {
    return this.states.touchForMessages(tx, messageIds);
  }

  private async write(
    id: number,
    ifMatch: IfMatch,
    change: (tx: Tx, before: ReadStateRow) => Promise<ReadStateRow>,
  ): Promise<ResourceResponse<ReadStateDto>> {
    const row = await this.uow.run(async (tx) => {
      const before = await this.states.lockVisible(tx, id);
      assertIfMatch(ifMatch, before.version);
      return change(tx, before);
    });
    return new ResourceResponse(present(withoutVersion(row)), { version: row.version });
  }
}
