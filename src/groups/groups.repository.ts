import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Projections } from '../platform/projections/projections.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import { ResourceTable } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { table } from '../platform/database/table.js';
import { ApiError } from '../platform/http/api-error.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import type { GroupDto } from './dto/group.dto.js';

export interface GroupRow extends GroupDto {
  readonly version: number;
}

// Direct members whose membership is live when the row is read (an expiry ends one with no write:
// a cached detail or page may count it until its entry is rebuilt or expires).
const MEMBER_COUNT = `(SELECT count(*)::int FROM group_memberships m WHERE m.group_id = groups.id
    AND m.removed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())) AS member_count`;

const RESOURCE_COLUMNS = `id, name, description, role_id, external_id, ${MEMBER_COUNT},
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;

// The row version: the record's own, plus the memberships' (a change of members changes member_count).
const VERSION = `groups.version + coalesce((SELECT v.version FROM projection_versions v WHERE v.scope = 'group' AND v.id = groups.id), 1)`;

export const GROUP_LIST = listSpec({
  from: 'groups',
  select: RESOURCE_COLUMNS,
  sort: ['id', 'name', 'created_at', 'updated_at'],
  defaultSort: 'name:asc',
  filters: { role_id: 'int', external_id: 'string' },
  search: ['name', 'description'],
  deletedColumn: 'is_deleted',
  alsoReads: ['group_memberships'],
});

export const GROUPS = table('groups', { columns: RESOURCE_COLUMNS, version: VERSION, list: GROUP_LIST });

type GroupColumn =
  | 'name'
  | 'description'
  | 'role_id'
  | 'external_id'
  | 'created_by'
  | 'updated_by'
  | 'is_deleted'
  | 'deleted_at'
  | 'deleted_by';

/** Groups (part 6.18): a soft-deletable resource table with cached details and list pages. */
@Injectable()
export class GroupsRepository extends ResourceTable<GroupRow, GroupColumn> {
  constructor(uow: UnitOfWork, projections: Projections, groupAccess: GroupAccess) {
    super({ table: GROUPS, type: 'group', notFound: 'GROUP_NOT_FOUND' }, uow, projections);
    // A membership that expires changes its group's member_count with no write of the group's.
    groupAccess.onGroupsChanged((tx, ids) => this.membersChanged(tx, ids));
  }

  /** A live group referenced from a body or a path (404 `GROUP_NOT_FOUND` otherwise), locked when in a write. */
  async liveGroup(db: EntityManager, id: number): Promise<GroupRow> {
    const row = await this.find(db, id);
    if (row === undefined || row.is_deleted) throw ApiError.notFound('GROUP_NOT_FOUND', id);
    return row;
  }

  /** Which of the ids name live groups (or, with `deletedToo`, groups at all). */
  async existingIds(db: EntityManager, ids: readonly number[], deletedToo = false): Promise<Set<number>> {
    if (ids.length === 0) return new Set();
    const rows = await db.query<{ id: string }[]>(
      'SELECT id FROM groups WHERE id = ANY($1::bigint[]) AND ($2 OR NOT is_deleted)',
      [[...new Set(ids)], deletedToo],
    );
    return new Set(rows.map((row) => Number(row.id)));
  }

  /** After a change of members: the group's version moves on and its detail is rebuilt after commit. */
  membersChanged(tx: Tx, groupIds: readonly number[]): void {
    if (groupIds.length === 0) return;
    tx.bumpProjections('group', groupIds);
    tx.afterCommit(async () => {
      for (const id of new Set(groupIds)) {
        const row = await this.find(this.uow.reader, id);
        if (row !== undefined) await this.refresh(row);
      }
    });
  }
}
