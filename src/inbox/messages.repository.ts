import { Injectable } from '@nestjs/common';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { InboxMessageDto } from './inbox.dto.js';
import { table } from '../platform/database/table.js';

export interface MessageRow extends InboxMessageDto {
  readonly version: number;
}

const RESOURCE_COLUMNS = `id, user_id, conversation_id, type, title, body, data, last_pushed_at,
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;

export const MESSAGE_LIST = listSpec({
  from: 'inbox_messages',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'created_at', 'updated_at'],
  defaultSort: 'created_at:desc',
  filters: { user_id: 'int', conversation_id: 'string', type: 'string' },
  search: ['title', 'body'],
  deletedColumn: 'is_deleted',
});

const INBOX_MESSAGES = table('inbox_messages', { columns: RESOURCE_COLUMNS, list: MESSAGE_LIST });

/** The columns a message write may set. */
type MessageColumn =
  | 'user_id'
  | 'conversation_id'
  | 'type'
  | 'title'
  | 'body'
  | 'data'
  | 'last_pushed_at'
  | 'created_by'
  | 'updated_by'
  | 'is_deleted'
  | 'deleted_at'
  | 'deleted_by';

@Injectable()
export class MessagesRepository extends ResourceTable<MessageRow, MessageColumn> {
  constructor(uow: UnitOfWork, projections: Projections) {
    super({ table: INBOX_MESSAGES, type: 'inbox_message', notFound: 'MESSAGE_NOT_FOUND' }, uow, projections);
  }

  /** Whether each of `ids` is deleted, under row locks taken in id order (so concurrent bulks cannot deadlock). */
  async lockDeletedState(tx: Tx, ids: readonly number[]): Promise<Map<number, boolean>> {
    const found = await tx.db.query<{ id: number; is_deleted: boolean }[]>(
      'SELECT id, is_deleted FROM inbox_messages WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE',
      [[...ids]],
    );
    return new Map(found.map((row) => [row.id, row.is_deleted]));
  }

  /** Soft-deletes the live messages among `ids` in one statement; answers the rows it changed. */
  async softDeleteMany(
    tx: Tx,
    ids: readonly number[],
    stamp: { deleted_at: Date; deleted_by: number | null },
  ): Promise<MessageRow[]> {
    const [rows] = await tx.write<[MessageRow[], number]>(
      INBOX_MESSAGES,
      `UPDATE inbox_messages SET is_deleted = true, deleted_at = $2, deleted_by = $3, updated_by = $3 WHERE id = ANY($1::bigint[]) AND NOT is_deleted RETURNING ${INBOX_MESSAGES.selected}`,
      [[...ids], stamp.deleted_at, stamp.deleted_by],
    );
    await this.changed(tx, rows);
    return rows;
  }
}
