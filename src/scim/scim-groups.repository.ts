import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { GROUPS } from '../groups/groups.repository.js';
import { scimPage, type FilterSchema } from './scim-filters.repository.js';
import type { Filter } from './scim-filter.js';
import { GROUP_SCHEMA } from './scim-schemas.js';

/** A direct member as SCIM names it: `value` its id, `type` User or Group. */
export interface ScimMember {
  readonly value: string;
  readonly type: 'User' | 'Group';
  readonly display?: string;
}

export interface ScimGroupRow {
  readonly id: string;
  readonly name: string;
  readonly external_id: string | null;
  readonly created_at: Date | string;
  readonly updated_at: Date | string;
  readonly version: number;
  readonly members: readonly ScimMember[];
}

const LIVE_MEMBERSHIP = 'm.removed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())';

export const GROUP_FILTERS: FilterSchema = {
  urns: [GROUP_SCHEMA.toLowerCase()],
  attributes: {
    id: { sql: 'groups.id', kind: 'id' },
    externalid: { sql: 'groups.external_id', kind: 'exact' },
    displayname: { sql: 'groups.name', kind: 'text' },
    'meta.lastmodified': { sql: 'groups.updated_at', kind: 'timestamp' },
    'meta.created': { sql: 'groups.created_at', kind: 'timestamp' },
  },
  multiValued: {
    members: {
      attributes: {
        value: { sql: 'coalesce(m.user_id, m.member_group_id)', kind: 'id' },
        type: { sql: `CASE WHEN m.user_id IS NULL THEN 'Group' ELSE 'User' END`, kind: 'text' },
      },
      some: (condition) =>
        `EXISTS (SELECT 1 FROM group_memberships m WHERE m.group_id = groups.id AND ${LIVE_MEMBERSHIP} AND (${condition}))`,
    },
  },
};

const COLUMNS = `groups.id::text AS id, name, external_id, created_at, updated_at, ${GROUPS.shape?.version ?? 'groups.version'} AS version`;

const MEMBERS = `coalesce((SELECT json_agg(json_build_object(
      'value', coalesce(m.user_id, m.member_group_id)::text,
      'type', CASE WHEN m.user_id IS NULL THEN 'Group' ELSE 'User' END,
      'display', coalesce(u.display_name, mg.name)) ORDER BY m.id)
    FROM group_memberships m LEFT JOIN users u ON u.id = m.user_id LEFT JOIN groups mg ON mg.id = m.member_group_id
    WHERE m.group_id = groups.id AND ${LIVE_MEMBERSHIP}), '[]'::json) AS members`;

/** SCIM's reads of groups (part 6.19): live groups, filtered in SQL, ordered by id. */
@Injectable()
export class ScimGroupsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  page(
    filter: Filter | undefined,
    offset: number,
    count: number,
    withMembers: boolean,
  ): Promise<{ total: number; rows: ScimGroupRow[] }> {
    const spec = {
      table: 'groups',
      schema: GROUP_FILTERS,
      columns: `${COLUMNS}, ${withMembers ? MEMBERS : `'[]'::json AS members`}`,
    } as const;
    return scimPage<ScimGroupRow>(this.uow.reader, spec, filter, offset, count);
  }

  async live(db: EntityManager, id: number, withMembers = true): Promise<ScimGroupRow | undefined> {
    const [row] = await db.query<ScimGroupRow[]>(
      `SELECT ${COLUMNS}, ${withMembers ? MEMBERS : `'[]'::json AS members`} FROM groups WHERE id = $1 AND NOT is_deleted`,
      [id],
    );
    return row;
  }

  read(id: number, withMembers = true): Promise<ScimGroupRow | undefined> {
    return this.live(this.uow.reader, id, withMembers);
  }

  /** The group's live direct members, in the write's transaction (a PATCH that replaces or filters them). */
  async members(db: EntityManager, id: number): Promise<ScimMember[]> {
    return db.query<ScimMember[]>(
      `SELECT coalesce(m.user_id, m.member_group_id)::text AS value,
          CASE WHEN m.user_id IS NULL THEN 'Group' ELSE 'User' END AS type
        FROM group_memberships m WHERE m.group_id = $1 AND ${LIVE_MEMBERSHIP} ORDER BY m.id`,
      [id],
    );
  }
}
