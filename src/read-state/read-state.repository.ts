import { Injectable } from '@nestjs/common';
import { Projections } from '../platform/projections/projections.js';
import { ApiError } from '../platform/http/api-error.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { assignments, ResourceTable, type ColumnValues } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { ReadCountsRepository } from './read-counts.repository.js';
import type { ReadStateDto } from './read-state.dto.js';
import { table } from '../platform/database/table.js';

export interface ReadStateRow extends ReadStateDto {
  readonly version: number;
  /** Whether the message is deleted (then the row is hidden); not part of the resource. */
  readonly message_deleted?: boolean;
}

const RESOURCE_COLUMNS = `rs.id, rs.message_id, rs.user_id, rs.conversation_id, rs.is_read, rs.read_at, rs.is_archived, rs.archived_at,
  rs.is_pinned, rs.pinned_at, rs.snoozed_until, coalesce(rs.snoozed_until > now(), false) AS is_snoozed, rs.updated_at, rs.updated_by`;
const FROM = 'message_read_state rs JOIN inbox_messages m ON m.id = rs.message_id';

export const READ_STATE_LIST = listSpec({
  from: `${FROM} AND NOT m.is_deleted`,
  select: RESOURCE_COLUMNS,
  alias: 'rs',
  // `is_snoozed` is judged at now(): a page is good until the next snooze ends.
  changesAt: 'rs.snoozed_until',
  sort: ['id', 'updated_at', 'read_at'],
  filters: {
    user_id: 'int',
    message_id: 'int',
    conversation_id: 'string',
    is_read: 'bool',
    is_archived: 'bool',
    is_pinned: 'bool',
  },
});

const MESSAGE_READ_STATE = table('message_read_state', {
  columns: `${RESOURCE_COLUMNS}, m.is_deleted AS message_deleted`,
  version: 'rs.version',
  from: FROM,
  idColumn: 'rs.id',
  list: READ_STATE_LIST,
});

type ReadStateColumn =
  'is_read' | 'read_at' | 'is_archived' | 'archived_at' | 'is_pinned' | 'pinned_at' | 'snoozed_until' | 'updated_by';

/**
 * Read-state rows, always read joined with their message (a deleted message hides its row).
 * Every write moves the recipient's counts (bumped in the transaction, rebuilt after commit).
 */
@Injectable()
export class ReadStateRepository extends ResourceTable<ReadStateRow, ReadStateColumn> {
  constructor(
    uow: UnitOfWork,
    projections: Projections,
    private readonly counts: ReadCountsRepository,
  ) {
    super(
      { table: MESSAGE_READ_STATE, type: 'message_read_state', notFound: 'READ_STATE_NOT_FOUND' },
      uow,
      projections,
    );
  }

  /** On the feed as the API shows it: without the message's deletion flag, which is not part of it. */
  protected override presentedOnFeed(row: ReadStateRow): { readonly id: number } {
    const { version: _version, message_deleted: _deleted, ...state } = row;
    return state;
  }

  /** The row under a lock; 404 when it does not exist or its message is deleted. */
  async lockVisible(tx: Tx, id: number): Promise<ReadStateRow> {
    const [row] = await tx.db.query<ReadStateRow[]>(
      `SELECT ${MESSAGE_READ_STATE.selected} FROM ${FROM} WHERE rs.id = $1 FOR UPDATE OF rs`,
      [id],
    );
    if (row === undefined || row.message_deleted === true) throw ApiError.notFound('READ_STATE_NOT_FOUND', id);
    return row;
  }

  /** One statement: the update, and the row as read (joined with its message) from RETURNING. */
  override async patch(tx: Tx, id: number, values: ColumnValues<ReadStateColumn>): Promise<ReadStateRow> {
    const { columns, placeholders, params } = assignments(values, 2);
    if (columns.length === 0) throw new Error(`patch of read state ${id} sets no column`);
    const set = columns.map((column, index) => `${column} = ${placeholders[index] ?? 'NULL'}`);
    const [rows] = await tx.write<[ReadStateRow[], number]>(
      MESSAGE_READ_STATE,
      `UPDATE message_read_state rs SET ${set.join(', ')} FROM inbox_messages m WHERE rs.id = $1 AND m.id = rs.message_id RETURNING ${MESSAGE_READ_STATE.selected}`,
      [id, ...params],
    );
    const row = rows[0];
    if (row === undefined) throw ApiError.notFound('READ_STATE_NOT_FOUND', id);
    await this.changed(tx, [row]);
    return row;
  }

  /** The recipient's row, created in the message's own transaction (the message write moves the counts). */
  async createFor(tx: Tx, message: { id: number; user_id: number; conversation_id: string | null }): Promise<void> {
    await tx.write(
      MESSAGE_READ_STATE,
      'INSERT INTO message_read_state (message_id, user_id, conversation_id, created_by, updated_by) VALUES ($1, $2, $3, $4, $4)',
      [message.id, message.user_id, message.conversation_id, tx.actor],
    );
  }

  /**
   * Messages were deleted or restored: their rows appear or disappear. Touching the rows moves
   * their versions, so their cached copies are rebuilt (re-read after commit, joined with the
   * message) and no older copy can win; the recipients' counts change too.
   */
  async touchForMessages(tx: Tx, messageIds: readonly number[]): Promise<void> {
    if (messageIds.length === 0) return;
    const [touched] = await tx.write<[{ id: number; user_id: number; conversation_id: string | null }[], number]>(
      MESSAGE_READ_STATE,
      'UPDATE message_read_state SET updated_by = $2 WHERE message_id = ANY($1::bigint[]) RETURNING id, user_id, conversation_id',
      [[...messageIds], tx.actor],
    );
    await this.counts.changed(tx, touched);
    const ids = touched.map((row) => row.id);
    tx.afterCommit(async () => {
      const rows = await this.uow.reader.query<ReadStateRow[]>(
        `SELECT ${MESSAGE_READ_STATE.selected} FROM ${FROM} WHERE rs.id = ANY($1::bigint[])`,
        [ids],
      );
      await Promise.all(rows.map((row) => this.refresh(row)));
    });
  }

  /** The detail entry after commit, and the recipient's counts (bumped now, rebuilt after commit). */
  override async changed(tx: Tx, rows: readonly ReadStateRow[]): Promise<void> {
    await this.counts.changed(
      tx,
      rows.map((row) => ({ user_id: row.user_id, conversation_id: row.conversation_id })),
    );
    await super.changed(tx, rows);
  }
}
