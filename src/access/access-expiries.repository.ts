import { Injectable } from '@nestjs/common';
import { table } from '../platform/database/table.js';
import type { Tx } from '../platform/database/unit-of-work.js';
import { EXPIRY_WRITERS_LOCK } from '../../migrations/1765756800000-access-events.js';

const ANNOUNCEMENTS = table('access_expiry_announcements');

/**
 * How far behind the clock the announcements stay: a history version is stamped just before its
 * transaction commits and becomes visible just after, so the history of a moment this far back is
 * final when it is read (no version stamped at or before it can still appear).
 */
const SETTLED = "interval '1 second'";

/**
 * One instant at which something of a user's expired, and on which devices (none: a grant); or
 * (`user_id` null) something of groups' expired at it: a membership (of `members`, or of a nested
 * group, named in `groups`), a group's grant, a group's authority or authority permission.
 */
export interface DueExpiry {
  readonly instant: Date;
  readonly user_id: number | null;
  readonly devices: number[];
  /** The groups whose members may have lost something (a group's expiry). */
  readonly groups: number[];
  /** Users whose own membership expired. */
  readonly members: number[];
  /** The groups a membership of which expired (their member counts change). */
  readonly containers: number[];
}

/**
 * The expiries not yet announced (migration `access-events`): every expiry an authority or an
 * authority permission ever had in the access history, and every grant's, after the mark. Whether
 * one took anything away is judged from the history as of its instant (`AccessExpiryAnnouncer`),
 * so one revoked or changed since is read as it was then.
 */
@Injectable()
export class AccessExpiriesRepository {
  /**
   * Locks the mark and reads what expired after it, up to a settled moment: at most `limit`
   * instants, whole (an instant is never split between batches). `until` is where the next batch
   * starts: the last instant read when there may be more, else the settled moment.
   */
  /**
   * The moment up to which expiries can be announced: taken once every write that gives a row an
   * expiry and is under way has committed (the lock of migration `access-events`, held by them
   * shared, taken here exclusively and let go at once with this short transaction), less the
   * settling margin. A later write stamps its rows after it, so nothing at or before it can appear.
   * A lock timeout (55P03) when such a write holds on for more than two seconds.
   */
  async settledMoment(tx: Tx): Promise<string> {
    // Writers queue behind a waiting exclusive request: wait briefly (55P03 past it).
    await tx.db.query("SET LOCAL lock_timeout = '2s'");
    await tx.db.query(`SELECT pg_advisory_xact_lock(${EXPIRY_WRITERS_LOCK})`);
    const [row] = await tx.db.query<{ settled: string }[]>(`SELECT (clock_timestamp() - ${SETTLED})::text AS settled`);
    if (row === undefined) throw new Error('no clock');
    return row.settled;
  }

  // Moments travel as text: a Date would drop the microseconds of an expiry written in SQL.
  async due(tx: Tx, settled: string, limit: number): Promise<{ expiries: DueExpiry[]; until: string | undefined }> {
    const [mark] = await tx.db.query<{ since: string; settled: string; ahead: boolean }[]>(
      `SELECT announced_until::text AS since, $1::text AS settled, $1::timestamptz > announced_until AS ahead
       FROM access_expiry_announcements FOR UPDATE`,
      [settled],
    );
    if (mark === undefined) throw new Error('access_expiry_announcements has no row');
    if (!mark.ahead) return { expiries: [], until: undefined };
    const rows = await tx.db.query<
      {
        instant: Date;
        last: string;
        user_id: string | null;
        devices: string[];
        groups: string[];
        members: string[];
        containers: string[];
      }[]
    >(
      `WITH expiring AS (
         SELECT h.expires_at AS instant, h.user_id, h.device_id, NULL::bigint AS group_id, NULL::bigint AS member,
                NULL::bigint AS container
         FROM authority_history h WHERE h.expires_at > $1 AND h.expires_at <= $2 AND h.user_id IS NOT NULL
         UNION ALL
         SELECT h.expires_at, h.user_id, h.device_id, NULL, NULL, NULL FROM authority_permission_history h
         WHERE h.expires_at > $1 AND h.expires_at <= $2 AND h.user_id IS NOT NULL
         UNION ALL
         SELECT g.expires_at, g.user_id, NULL, NULL, NULL, NULL FROM permission_grants g
         WHERE g.expires_at > $1 AND g.expires_at <= $2 AND g.user_id IS NOT NULL
         UNION ALL
         -- Groups (v1.3): what a group held or a membership gave, announced for the members reached.
         SELECT h.expires_at, NULL, h.device_id, a.group_id, NULL, NULL FROM authority_history h
         JOIN authorities a ON a.id = h.authority_id WHERE h.expires_at > $1 AND h.expires_at <= $2 AND h.user_id IS NULL
         UNION ALL
         SELECT h.expires_at, NULL, h.device_id, a.group_id, NULL, NULL FROM authority_permission_history h
         JOIN authorities a ON a.id = h.authority_id WHERE h.expires_at > $1 AND h.expires_at <= $2 AND h.user_id IS NULL
         UNION ALL
         SELECT g.expires_at, NULL, NULL, g.group_id, NULL, NULL FROM permission_grants g
         WHERE g.expires_at > $1 AND g.expires_at <= $2 AND g.group_id IS NOT NULL
         UNION ALL
         SELECT m.expires_at, NULL, NULL, m.member_group_id, m.user_id, m.group_id FROM group_memberships m
         WHERE m.expires_at > $1 AND m.expires_at <= $2
       ), instants AS (
         SELECT DISTINCT instant FROM expiring ORDER BY instant LIMIT $3
       )
       SELECT e.instant, (SELECT max(instant) FROM instants)::text AS last, e.user_id,
              array_remove(array_agg(DISTINCT e.device_id), NULL) AS devices,
              array_remove(array_agg(DISTINCT e.group_id), NULL) AS groups,
              array_remove(array_agg(DISTINCT e.member), NULL) AS members,
              array_remove(array_agg(DISTINCT e.container), NULL) AS containers
       FROM expiring e JOIN instants i ON i.instant = e.instant
       GROUP BY e.instant, e.user_id ORDER BY e.instant, e.user_id NULLS LAST`,
      [mark.since, mark.settled, limit],
    );
    const instants = new Set(rows.map((row) => row.instant.getTime()));
    const until = instants.size < limit ? mark.settled : (rows[0]?.last ?? mark.settled);
    return {
      expiries: rows.map((row) => ({
        instant: row.instant,
        user_id: row.user_id === null ? null : Number(row.user_id),
        devices: row.devices.map(Number),
        groups: row.groups.map(Number),
        members: row.members.map(Number),
        containers: row.containers.map(Number),
      })),
      until,
    };
  }

  async announcedUntil(tx: Tx, until: string): Promise<void> {
    await tx.write(ANNOUNCEMENTS, 'UPDATE access_expiry_announcements SET announced_until = $1::timestamptz', [until]);
  }
}
