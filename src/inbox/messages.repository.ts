import { Injectable } from '@nestjs/common';
import { CacheService } from '../cache/cache.service.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { ResourceTable } from '../database/resource-table.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import type { InboxMessageDto } from './inbox.dto.js';

export interface MessageRow extends InboxMessageDto {
  readonly version: number;
}

const RESOURCE_COLUMNS = `id, user_id, conversation_id, type, title, body, data, last_pushed_at,
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;
export const MESSAGE_COLUMNS = `version, ${RESOURCE_COLUMNS}`;

export const MESSAGE_LIST: ListSpec = {
  from: 'inbox_messages',
  select: RESOURCE_COLUMNS,
  idColumn: 'id',
  sort: { id: 'id', created_at: 'created_at', updated_at: 'updated_at' },
  defaultSort: 'created_at:desc',
  filters: {
    user_id: { column: 'user_id', type: 'int' },
    conversation_id: { column: 'conversation_id', type: 'string' },
    type: { column: 'type', type: 'string' },
  },
  search: ['title', 'body'],
  deletedColumn: 'is_deleted',
};

@Injectable()
export class MessagesRepository extends ResourceTable<MessageRow> {
  constructor(uow: UnitOfWork, cache: CacheService) {
    super(
      { table: 'inbox_messages', columns: MESSAGE_COLUMNS, type: 'inbox_message', notFound: 'MESSAGE_NOT_FOUND' },
      uow,
      cache,
    );
  }

  rebuildAfterCommit(tx: Tx, rows: readonly MessageRow[]): void {
    tx.afterCommit(async () => {
      await Promise.all(rows.map((row) => this.refresh(row)));
    });
  }
}
