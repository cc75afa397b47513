import { Injectable } from '@nestjs/common';
import { Projections } from '../platform/projections/projections.js';
import { ListPages } from '../platform/projections/list-pages.js';
import { listSpec } from '../platform/http/list/list-spec.js';
import type { ListResponse } from '../platform/http/responses.js';
import type { Tx } from '../platform/database/unit-of-work.js';
import { table } from '../platform/database/table.js';
import type { MembershipDto } from './dto/group.dto.js';

const ACTIVE = '(m.removed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now()))';

const MEMBERSHIP_COLUMNS = `m.id, m.group_id, m.user_id, m.member_group_id, m.expires_at, m.added_by, m.added_at,
  m.removed_by, m.removed_at, m.remove_reason, ${ACTIVE} AS is_active`;

/** `GET /groups/{id}/members`: the direct memberships, oldest first. */
export const MEMBERSHIP_LIST = listSpec({
  from: 'group_memberships m',
  alias: 'm',
  select: MEMBERSHIP_COLUMNS,
  sort: ['id', 'added_at'],
  filters: {
    member_type: {
      column: `CASE WHEN m.user_id IS NULL THEN 'group' ELSE 'user' END`,
      type: { enum: ['user', 'group'] },
    },
    is_active: { column: ACTIVE, type: 'bool' },
  },
  changesAt: 'expires_at',
});

const MEMBERSHIPS = table('group_memberships');

/** Nesting changes are judged one at a time everywhere: two concurrent nestings cannot close a cycle. */
const NESTING_LOCK = '7306020240617260018';

/** A live membership of a group, as a change of members finds it. */
export interface LiveMembership {
  readonly id: number;
  readonly user_id: number | null;
  readonly member_group_id: number | null;
}

/** One membership to add. */
export interface NewMembership {
  readonly user_id: number | null;
  readonly member_group_id: number | null;
}

/** Memberships of users and groups in groups (part 6.18): append-only, like permission grants. */
@Injectable()
export class GroupMembershipsRepository {
  private readonly pages: ListPages;

  constructor(projections: Projections) {
    this.pages = new ListPages(projections);
  }

  list(groupId: number, query: Record<string, unknown>): Promise<ListResponse<MembershipDto>> {
    return this.pages.read<MembershipDto>(MEMBERSHIP_LIST, query, { where: 'm.group_id = $1', params: [groupId] });
  }

  /** Waits for every other nesting change in flight (the lock is held until this transaction ends). */
  async lockNesting(tx: Tx): Promise<void> {
    await tx.db.query('SELECT pg_advisory_xact_lock($1::bigint)', [NESTING_LOCK]);
  }

  /** The group's live (not removed, not expired) memberships of the users and groups given. */
  async live(tx: Tx, groupId: number, users: readonly number[], groups: readonly number[]): Promise<LiveMembership[]> {
    const rows = await tx.db.query<LiveMembership[]>(
      `SELECT m.id, m.user_id, m.member_group_id FROM group_memberships m
       WHERE m.group_id = $1 AND ${ACTIVE}
         AND (m.user_id = ANY($2::bigint[]) OR m.member_group_id = ANY($3::bigint[]))`,
      [groupId, [...users], [...groups]],
    );
    return rows.map((row) => ({
      id: Number(row.id),
      user_id: row.user_id === null ? null : Number(row.user_id),
      member_group_id: row.member_group_id === null ? null : Number(row.member_group_id),
    }));
  }

  /**
   * Ends memberships that expired but were never removed, of these members (an expired row still
   * holds its pair's unique slot): stamped removed by nobody, as of their expiry's passing.
   */
  async closeExpired(tx: Tx, groupId: number, users: readonly number[], groups: readonly number[]): Promise<void> {
    await tx.write(
      MEMBERSHIPS,
      `UPDATE group_memberships SET removed_at = now(), remove_reason = 'expired'
       WHERE group_id = $1 AND removed_at IS NULL AND expires_at <= now()
         AND (user_id = ANY($2::bigint[]) OR member_group_id = ANY($3::bigint[]))`,
      [groupId, [...users], [...groups]],
    );
  }

  /** Adds the memberships in one statement; answers their ids in the order given. */
  async add(
    tx: Tx,
    groupId: number,
    members: readonly NewMembership[],
    details: { expires_at: Date | null; reason: string | null },
  ): Promise<number[]> {
    if (members.length === 0) return [];
    const rows = await tx.write<{ id: string }[]>(
      MEMBERSHIPS,
      `INSERT INTO group_memberships (group_id, user_id, member_group_id, expires_at, reason, added_by)
       SELECT $1, i.user_id, i.member_group_id, $4, $5, $6
       FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS i(user_id, member_group_id, ordinal)
       ORDER BY i.ordinal
       RETURNING id`,
      [
        groupId,
        members.map((member) => member.user_id),
        members.map((member) => member.member_group_id),
        details.expires_at,
        details.reason,
        tx.actor,
      ],
    );
    return rows.map((row) => Number(row.id));
  }

  /** Stamps the removal of the memberships. */
  async remove(tx: Tx, ids: readonly number[], reason: string | null): Promise<void> {
    if (ids.length === 0) return;
    await tx.write(
      MEMBERSHIPS,
      'UPDATE group_memberships SET removed_at = now(), removed_by = $2, remove_reason = $3 WHERE id = ANY($1::bigint[]) AND removed_at IS NULL',
      [[...ids], tx.actor, reason],
    );
  }

  /** Removes those of the memberships still live (neither removed nor expired); answers their ids. */
  async removeLive(tx: Tx, ids: readonly number[], reason: string | null): Promise<number[]> {
    if (ids.length === 0) return [];
    // An UPDATE … RETURNING answers [rows, count] through TypeORM.
    const [rows] = await tx.write<[{ id: string }[], number]>(
      MEMBERSHIPS,
      `UPDATE group_memberships SET removed_at = now(), removed_by = $2, remove_reason = $3
       WHERE id = ANY($1::bigint[]) AND removed_at IS NULL AND (expires_at IS NULL OR expires_at > now())
       RETURNING id`,
      [[...ids], tx.actor, reason],
    );
    return rows.map((row) => Number(row.id)).sort((a, b) => a - b);
  }

  /** The memberships as the API shows them (the feed's and the audit's `data`). */
  async presented(tx: Tx, ids: readonly number[]): Promise<MembershipDto[]> {
    if (ids.length === 0) return [];
    return tx.db.query<MembershipDto[]>(
      `SELECT ${MEMBERSHIP_COLUMNS} FROM group_memberships m WHERE m.id = ANY($1::bigint[]) ORDER BY m.id`,
      [[...ids]],
    );
  }
}
