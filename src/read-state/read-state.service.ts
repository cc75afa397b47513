import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { CacheService } from '../cache/cache.service.js';
import { ApiError } from '../common/api-error.js';
import { assertIfMatch, type IfMatch } from '../common/etag.js';
import { parseListQuery } from '../common/list/list-query.parser.js';
import { runList } from '../common/list/list-runner.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { currentActorId } from '../common/request-context.js';
import { ResourceResponse, type ListResponse } from '../common/responses.js';
import { ResourceTable, withoutVersion } from '../database/resource-table.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import { ReadCountsService, type CountsScope } from './read-counts.service.js';
import type { ReadStateDto } from './read-state.dto.js';

interface ReadStateRow extends ReadStateDto {
  readonly version: number;
  /** Whether the message is deleted (then the row is hidden); not part of the resource. */
  readonly message_deleted?: boolean;
}

const RESOURCE_COLUMNS = `rs.id, rs.message_id, rs.user_id, rs.conversation_id, rs.is_read, rs.read_at, rs.is_archived, rs.archived_at,
  rs.is_pinned, rs.pinned_at, rs.snoozed_until, coalesce(rs.snoozed_until > now(), false) AS is_snoozed, rs.updated_at, rs.updated_by`;
const FROM = 'message_read_state rs JOIN inbox_messages m ON m.id = rs.message_id';
const COLUMNS = `rs.version, ${RESOURCE_COLUMNS}, m.is_deleted AS message_deleted`;

const READ_STATE_LIST: ListSpec = {
  from: `${FROM} AND NOT m.is_deleted`,
  select: RESOURCE_COLUMNS,
  idColumn: 'rs.id',
  sort: { id: 'rs.id', updated_at: 'rs.updated_at', read_at: 'rs.read_at' },
  defaultSort: 'id:asc',
  filters: {
    user_id: { column: 'rs.user_id', type: 'int' },
    message_id: { column: 'rs.message_id', type: 'int' },
    conversation_id: { column: 'rs.conversation_id', type: 'string' },
    is_read: { column: 'rs.is_read', type: 'bool' },
    is_archived: { column: 'rs.is_archived', type: 'bool' },
    is_pinned: { column: 'rs.is_pinned', type: 'bool' },
  },
  search: [],
};

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
    { flag: 'is_read' | 'is_archived' | 'is_pinned'; at: 'read_at' | 'archived_at' | 'pinned_at'; action: string }
  >
> = {
  read: { flag: 'is_read', at: 'read_at', action: 'message_read_state.mark_read' },
  archived: { flag: 'is_archived', at: 'archived_at', action: 'message_read_state.archive' },
  pinned: { flag: 'is_pinned', at: 'pinned_at', action: 'message_read_state.pin' },
};

/** Message read state (part 6.8): rows of deleted messages are hidden everywhere. */
@Injectable()
export class ReadStateService {
  private readonly states: ResourceTable<ReadStateRow>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly counts: ReadCountsService,
    cache: CacheService,
  ) {
    this.states = new ResourceTable<ReadStateRow>(
      {
        table: 'message_read_state',
        from: FROM,
        idColumn: 'rs.id',
        columns: COLUMNS,
        type: 'message_read_state',
        notFound: 'READ_STATE_NOT_FOUND',
      },
      uow,
      cache,
    );
  }

  list(query: Record<string, unknown>): Promise<ListResponse<ReadStateDto>> {
    return runList<ReadStateDto>(this.uow.reader, READ_STATE_LIST, parseListQuery(READ_STATE_LIST, query)).then(
      (page) => Object.assign(page, { items: page.items.map(present) }) as ListResponse<ReadStateDto>,
    );
  }

  async get(id: number): Promise<ResourceResponse<ReadStateDto>> {
    const read = await this.states.read(id);
    const row = read === undefined ? undefined : (JSON.parse(read.entry.json) as Omit<ReadStateRow, 'version'>);
    if (read === undefined || row === undefined || row.message_deleted === true)
      throw ApiError.notFound('READ_STATE_NOT_FOUND', id);
    return new ResourceResponse(present(row), { cache: read.cache, version: read.entry.version });
  }

  /** `mark-read`, `archive`, `pin`: set or clear one flag; repeating the current state changes nothing. */
  setFlag(id: number, flag: Flag, on: boolean, ifMatch: IfMatch): Promise<ResourceResponse<ReadStateDto>> {
    const { flag: column, at, action } = FLAG_COLUMNS[flag];
    return this.write(id, ifMatch, async (tx, before) => {
      if (before[column] === on) return before;
      const after = await this.update(
        tx,
        id,
        `${column} = $2, ${at} = CASE WHEN $2 THEN now() ELSE NULL END, updated_by = $3`,
        [on, currentActorId()],
      );
      await this.audit.record(tx.db, {
        action,
        resource_type: 'message_read_state',
        resource_id: id,
        changes: { [column]: [before[column], on] },
      });
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
      const after = await this.update(tx, id, 'snoozed_until = $2, updated_by = $3', [at, currentActorId()]);
      await this.audit.record(tx.db, {
        action: 'message_read_state.snooze',
        resource_type: 'message_read_state',
        resource_id: id,
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
  async createFor(tx: Tx, message: { id: number; user_id: number; conversation_id: string | null }): Promise<void> {
    await tx.db.query(
      'INSERT INTO message_read_state (message_id, user_id, conversation_id, created_by, updated_by) VALUES ($1, $2, $3, $4, $4)',
      [message.id, message.user_id, message.conversation_id, currentActorId()],
    );
  }

  /**
   * Messages were deleted or restored: their read-state rows appear or disappear. Touching the
   * rows moves their versions, so their cached copies are rebuilt and no older copy can win;
   * the recipients' counts change too.
   */
  async messagesChanged(tx: Tx, messageIds: readonly number[]): Promise<void> {
    if (messageIds.length === 0) return;
    const [touched] = await tx.db.query<[{ id: number; user_id: number; conversation_id: string | null }[], number]>(
      'UPDATE message_read_state SET updated_by = $2 WHERE message_id = ANY($1::bigint[]) RETURNING id, user_id, conversation_id',
      [[...messageIds], currentActorId()],
    );
    await this.counts.changed(tx, touched);
    const ids = touched.map((row) => row.id);
    tx.afterCommit(async () => {
      const rows = await this.uow.reader.query<ReadStateRow[]>(
        `SELECT ${COLUMNS} FROM ${FROM} WHERE rs.id = ANY($1::bigint[])`,
        [ids],
      );
      await Promise.all(rows.map((row) => this.states.refresh(row)));
    });
  }

  private async write(
    id: number,
    ifMatch: IfMatch,
    change: (tx: Tx, before: ReadStateRow) => Promise<ReadStateRow>,
  ): Promise<ResourceResponse<ReadStateDto>> {
    const row = await this.uow.run(async (tx) => {
      const [before] = await tx.db.query<ReadStateRow[]>(
        `SELECT ${COLUMNS} FROM ${FROM} WHERE rs.id = $1 FOR UPDATE OF rs`,
        [id],
      );
      if (before === undefined || before.message_deleted === true) throw ApiError.notFound('READ_STATE_NOT_FOUND', id);
      assertIfMatch(ifMatch, before.version);
      const after = await change(tx, before);
      if (after !== before) {
        await this.counts.changed(tx, [{ user_id: after.user_id, conversation_id: after.conversation_id }]);
        tx.afterCommit(() => this.states.refresh(after));
      }
      return after;
    });
    return new ResourceResponse(present(withoutVersion(row)), { version: row.version });
  }

  /** One statement: the update, and the row as read (joined with its message) from RETURNING. */
  private async update(tx: Tx, id: number, assignments: string, params: readonly unknown[]): Promise<ReadStateRow> {
    const [rows] = await tx.db.query<[ReadStateRow[], number]>(
      `UPDATE message_read_state rs SET ${assignments} FROM inbox_messages m WHERE rs.id = $1 AND m.id = rs.message_id RETURNING ${COLUMNS}`,
      [id, ...params],
    );
    const row = rows[0];
    if (row === undefined) throw ApiError.notFound('READ_STATE_NOT_FOUND', id);
    return row;
  }
}
