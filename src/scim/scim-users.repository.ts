import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { USERS } from '../users/users.repository.js';
import { scimPage, type FilterSchema } from './scim-filters.repository.js';
import type { Filter } from './scim-filter.js';
import { USER_SCHEMA } from './scim-schemas.js';

/** A user as SCIM reads it: the admin API's fields, what SCIM keeps beside them, and its direct groups. */
export interface ScimUserRow {
  readonly id: string;
  readonly email: string;
  readonly display_name: string;
  readonly phone: string | null;
  readonly user_name: string | null;
  readonly external_id: string | null;
  readonly status_id: number;
  readonly scim_profile: Readonly<Record<string, unknown>> | null;
  readonly created_at: Date | string;
  readonly updated_at: Date | string;
  readonly version: number;
  readonly groups: readonly { readonly value: string; readonly display: string }[];
}

// Each expression is the one an index of the migration scim-users (or an earlier one) is on.
export const USER_FILTERS: FilterSchema = {
  urns: [USER_SCHEMA.toLowerCase()],
  attributes: {
    id: { sql: 'users.id', kind: 'id' },
    externalid: { sql: 'users.external_id', kind: 'exact' },
    // A user without a userName presents its email as one (part 6.19).
    username: { sql: 'coalesce(users.user_name, users.email)', kind: 'text' },
    displayname: { sql: 'users.display_name', kind: 'text' },
    active: { sql: '(users.status_id = 2)', kind: 'boolean' },
    'meta.lastmodified': { sql: 'users.updated_at', kind: 'timestamp' },
    'meta.created': { sql: 'users.created_at', kind: 'timestamp' },
  },
  multiValued: {
    // One email per user: the work address, and the primary one.
    emails: {
      attributes: {
        value: { sql: 'users.email', kind: 'text' },
        type: { sql: `'work'::text`, kind: 'text' },
        primary: { sql: 'true', kind: 'boolean' },
      },
      some: (condition) => `(${condition})`,
    },
  },
};

const COLUMNS = `users.id::text AS id, email, display_name, phone, user_name, external_id, status_id, scim_profile,
  created_at, updated_at, ${USERS.shape?.version ?? 'users.version'} AS version`;

// Direct, live memberships in live groups: what `groups` of RFC 7643 §4.1.2 lists.
const GROUPS = `coalesce((SELECT json_agg(json_build_object('value', g.id::text, 'display', g.name) ORDER BY g.id)
    FROM group_memberships m JOIN groups g ON g.id = m.group_id AND NOT g.is_deleted
    WHERE m.user_id = users.id AND m.removed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())), '[]'::json) AS groups`;

/** SCIM's reads of users (part 6.19): live users only, filtered in SQL, ordered by id. */
@Injectable()
export class ScimUsersRepository {
  constructor(private readonly uow: UnitOfWork) {}

  page(
    filter: Filter | undefined,
    offset: number,
    count: number,
    withGroups: boolean,
  ): Promise<{ total: number; rows: ScimUserRow[] }> {
    const spec = {
      table: 'users',
      schema: USER_FILTERS,
      columns: `${COLUMNS}, ${withGroups ? GROUPS : `'[]'::json AS groups`}`,
    } as const;
    return scimPage<ScimUserRow>(this.uow.reader, spec, filter, offset, count);
  }

  async live(db: EntityManager, id: number): Promise<ScimUserRow | undefined> {
    const [row] = await db.query<ScimUserRow[]>(
      `SELECT ${COLUMNS}, ${GROUPS} FROM users WHERE id = $1 AND NOT is_deleted`,
      [id],
    );
    return row;
  }

  read(id: number): Promise<ScimUserRow | undefined> {
    return this.live(this.uow.reader, id);
  }
}
