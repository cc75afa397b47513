import { Injectable } from '@nestjs/common';
import type { PoolClient } from 'pg';
import { MAX_GROUP_DEPTH } from '../access-model/group-rules.js';
import { preparedName } from '../platform/database/prepared.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import type { Extent } from './device-access-walk.js';
import {
  admissible,
  at,
  type DeviceAccessAsked,
  holdingGroups,
  momentOf,
  ownWays,
  REACHED_BY_ASKED,
  ROLE_GROUPS,
  type SnapshotReader,
  THROUGH,
  USER_VERSION_AT,
} from './access-history.repository.js';

/** One window of the answer: the users in it who may act, in order, and where it ends. */
export interface DeviceAccessWindow {
  readonly ids: number[];
  /** The last user id the window covers (the next begins after it); null: it reached the end. */
  readonly horizon: number | null;
  /** The first candidate in the window (admissible or not), or null when it held none. */
  readonly first: number | null;
  readonly moment: Date;
}

/**
 * The device question read in windows of user ids, in order (part 6.13): a page costs what its
 * window costs, not what the whole answer costs (100 000 users reached through ten groups took
 * over a second to evaluate in full for each page).
 *
 * Each source of candidates is a stream in user order: the users' own ways together, and the
 * direct members of each group that reaches them (from the groups holding the permission on the
 * device and those that conferred a role with it, down their nested groups at T), read from the
 * membership history's index in user order and cut at `batch`. The window ends at the smallest
 * last id among the streams that were cut (every candidate up to it is known), and its candidates
 * are judged by the same conditions as `deviceAccessCandidates`.
 *
 * A user is a direct member at T when the newest version at T of its memberships of the group is
 * active and not expired: its memberships of one group never overlap (one live at a time), so
 * the newest version of any of them is the newest of the one that was live.
 */
@Injectable()
export class DeviceAccessWindowsRepository {
  constructor(private readonly uow: UnitOfWork) {}

  /**
   * Runs `read` with windows that all see one snapshot and one `now()` (a repeatable-read
   * transaction): the windows of one answer agree with each other. `extent` is the last candidate
   * of the whole answer in its order (allowed or not) and how many users there are, for an
   * estimate; `snapshot` reads
   * the rest of the answer (its users' standing, the device's authorities) in the same snapshot.
   *
   * The window's SQL is a named prepared statement run with its generic plan: planning it anew
   * cost 7 ms of a 10 ms window (measured on 10 groups of 10 000), and its parameters do not
   * change which plan is good (each stream is one index range whatever the ids). The statements
   * are per connection, named by their text (one per combination of `via` and direction).
   */
  async inOneSnapshot<T>(
    read: (
      window: (after: number | null, batch: number) => Promise<DeviceAccessWindow>,
      extent: () => Promise<Extent>,
      snapshot: SnapshotReader,
    ) => Promise<T>,
    asked: DeviceAccessAsked,
  ): Promise<T> {
    const reversed: DeviceAccessAsked = { ...asked, direction: asked.direction === 'asc' ? 'desc' : 'asc' };
    const runner = this.uow.reader.connection.createQueryRunner();
    const client = (await runner.connect()) as PoolClient;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const snapshot: SnapshotReader = {
        query: async <R>(name: string, text: string, values: unknown[]) =>
          (await client.query({ name: preparedName(name, text), text, values })).rows as R[],
      };
      const result = await read(
        (after, batch) => this.window(client, asked, after, batch),
        async () => ({
          last: (await this.window(client, reversed, null, 1)).first,
          population: await population(client),
        }),
        snapshot,
      );
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      await runner.release();
    }
  }

  private async window(
    client: PoolClient,
    asked: DeviceAccessAsked,
    after: number | null,
    batch: number,
  ): Promise<DeviceAccessWindow> {
    const ascending = asked.direction === 'asc';
    const order = ascending ? 'ASC' : 'DESC';
    // `$7` is always an id (the first window starts past either end), so each stream is an index range.
    const beyond = (column: string): string => `${column} ${ascending ? '>' : '<'} $7::bigint`;
    const own = ownWays(asked.via);
    const holding = holdingGroups(asked.via);
    // By role: the users who ever had one of the roles (an index range); not another way.
    const ownStream = `SELECT o.user_id, bool_or(o.other) AS other FROM (
           ${own.map((way) => `SELECT w.user_id, true AS other FROM (${way}) w`).join(' UNION ALL ')}
           UNION ALL
           SELECT DISTINCT h.user_id, false FROM user_access_history h
           WHERE $5::bigint IS NULL AND cardinality($3::int[]) > 0 AND h.role_id = ANY($3::int[]) AND h.valid_from <= %T) o
         WHERE ${beyond('o.user_id')} GROUP BY o.user_id ORDER BY o.user_id ${order} LIMIT $8`;
    const text = at(
      `WITH RECURSIVE ${THROUGH},
         roots(group_id, holding) AS (
           ${holding.length > 0 ? `SELECT hg.group_id, true AS holding FROM (${holding.join(' UNION ')}) hg UNION ALL` : ''}
           SELECT rg.group_id, false FROM (${ROLE_GROUPS}) rg),
         down(group_id, via, holding) AS (
           SELECT r.group_id, ARRAY[r.group_id], r.holding FROM roots r
           WHERE EXISTS (SELECT 1 FROM group_role_at(r.group_id, %T))
           UNION ALL
           SELECT m.member_group_id, d.via || m.member_group_id, d.holding FROM down d CROSS JOIN LATERAL (
             SELECT v.member_group_id FROM (
               SELECT DISTINCT ON (h.membership_id) h.member_group_id, h.is_active, h.expires_at
               FROM group_membership_history h
               WHERE h.group_id = d.group_id AND h.member_group_id IS NOT NULL AND h.valid_from <= %T
               ORDER BY h.membership_id, h.valid_from DESC, h.id DESC) v
             WHERE v.is_active AND (v.expires_at IS NULL OR v.expires_at > %T)) m
           WHERE cardinality(d.via) < ${MAX_GROUP_DEPTH} AND m.member_group_id <> ALL (d.via)
             AND EXISTS (SELECT 1 FROM group_role_at(m.member_group_id, %T))),
         reached AS (SELECT group_id, bool_or(holding) AS holding FROM down GROUP BY group_id),
         streams AS (
           SELECT r.holding AS other, NULL::boolean[] AS others, (
             SELECT array_agg(s.user_id ORDER BY s.user_id ${order}) FROM (
               SELECT v.user_id FROM (
                 SELECT DISTINCT ON (h.user_id) h.user_id, h.is_active, h.expires_at FROM group_membership_history h
                 WHERE h.group_id = r.group_id AND h.user_id IS NOT NULL AND h.valid_from <= %T AND ${beyond('h.user_id')}
                 ORDER BY h.user_id ${order}, h.valid_from DESC, h.id DESC) v
               WHERE v.is_active AND (v.expires_at IS NULL OR v.expires_at > %T)
                 AND ${REACHED_BY_ASKED.replaceAll('r.user_id', 'v.user_id')}
               ORDER BY v.user_id ${order} LIMIT $8) s) AS ids
           FROM reached r
           UNION ALL
           SELECT NULL, array_agg(s.other ORDER BY s.user_id ${order}), array_agg(s.user_id ORDER BY s.user_id ${order})
           FROM (${ownStream}) s),
         horizon AS (
           SELECT ${ascending ? 'min' : 'max'}(ids[$8]) AS id FROM streams WHERE cardinality(ids) = $8),
         candidates AS (
           SELECT u.user_id, bool_or(u.other) AS other FROM (
             SELECT unnest(s.ids) AS user_id, s.other FROM streams s WHERE s.others IS NULL
             UNION ALL
             SELECT unnest(s.ids), unnest(s.others) FROM streams s WHERE s.others IS NOT NULL) u
           WHERE (SELECT id FROM horizon) IS NULL OR u.user_id ${ascending ? '<=' : '>='} (SELECT id FROM horizon)
           GROUP BY u.user_id),
         admissible AS (
           SELECT c.user_id AS id FROM candidates c CROSS JOIN LATERAL ${USER_VERSION_AT.replace('%U', 'c.user_id')} u
           WHERE ${admissible('c.other')})
         SELECT ${momentOf('$6')} AS moment, (SELECT id FROM horizon) AS horizon,
           (SELECT ${ascending ? 'min' : 'max'}(user_id) FROM candidates) AS first,
           (SELECT array_agg(id ORDER BY id ${order}) FROM admissible) AS ids`,
      '$6',
    );
    const answered = await client.query<{
      moment: Date;
      horizon: string | null;
      first: string | null;
      ids: string[] | null;
    }>({
      name: preparedName('device-access-window', text),
      text,
      values: [
        asked.deviceId,
        asked.permissionId,
        asked.via.has('role') ? [...asked.roleIds] : [],
        [...asked.adminRoleIds],
        asked.groupId,
        asked.moment,
        // Before the first id either way (any bigint may be a user's id, 0 and below included).
        after ?? (ascending ? '-9223372036854775808' : '9223372036854775807'),
        batch,
      ],
    });
    const [row] = answered.rows;
    if (row === undefined) throw new Error('a device access window answered no row');
    return {
      ids: (row.ids ?? []).map(Number),
      horizon: row.horizon === null ? null : Number(row.horizon),
      first: row.first === null ? null : Number(row.first),
      moment: row.moment,
    };
  }
}

/**
 * How many users there are, from the table's statistics (kept by autovacuum's analyze), or counted
 * when it was never analysed: the ceiling of an estimate.
 */
async function population(client: PoolClient): Promise<number | null> {
  const answered = await client.query<{ n: string | null }>(
    `SELECT CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint ELSE (SELECT count(*) FROM users) END AS n
     FROM pg_class c WHERE c.oid = 'users'::regclass`,
  );
  const n = answered.rows[0]?.n;
  return n === undefined || n === null ? null : Number(n);
}
