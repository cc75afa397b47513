import { Injectable } from '@nestjs/common';
import { table } from '../platform/database/table.js';
import type { Tx } from '../platform/database/unit-of-work.js';

const ANNOUNCEMENTS = table('access_expiry_announcements');

/** One instant at which some of a user's access expired, and where (`devices`: their authorities' devices). */
export interface DueExpiry {
  readonly instant: Date;
  readonly user_id: number;
  readonly devices: number[];
}

/**
 * What expired since the last announcement (migration `access-events`): authorities, authority
 * permissions and permission grants whose `expires_at` has passed and that were not revoked or
 * deleted first (those were announced by their write).
 */
@Injectable()
export class AccessExpiriesRepository {
  /**
   * Locks the announcement mark and reads what expired after it, up to now: at most `limit`
   * instants, whole (an instant is never split between two batches). `until` is where the next
   * batch starts: the last instant read, or now when everything up to now was.
   */
  async due(tx: Tx, limit: number): Promise<{ expiries: DueExpiry[]; until: Date }> {
    const [mark] = await tx.db.query<{ since: Date; now: Date }[]>(
      "SELECT announced_until AS since, date_trunc('milliseconds', clock_timestamp()) AS now FROM access_expiry_announcements FOR UPDATE",
    );
    if (mark === undefined) throw new Error('access_expiry_announcements has no row');
    const rows = await tx.db.query<{ instant: Date; user_id: string; devices: string[] }[]>(
      `WITH expiring AS (
         SELECT a.expires_at AS instant, a.user_id, a.device_id FROM authorities a
         WHERE a.expires_at > $1 AND a.expires_at <= $2 AND a.is_active AND a.revoked_at IS NULL AND NOT a.is_deleted
         UNION ALL
         SELECT ap.expires_at, a.user_id, a.device_id FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id
         WHERE ap.expires_at > $1 AND ap.expires_at <= $2 AND ap.revoked_at IS NULL
         UNION ALL
         SELECT g.expires_at, g.user_id, NULL FROM permission_grants g
         WHERE g.expires_at > $1 AND g.expires_at <= $2 AND g.revoked_at IS NULL
       ), instants AS (
         SELECT DISTINCT instant FROM expiring ORDER BY instant LIMIT $3
       )
       SELECT e.instant, e.user_id, array_remove(array_agg(DISTINCT e.device_id), NULL) AS devices
       FROM expiring e JOIN instants i ON i.instant = e.instant
       GROUP BY e.instant, e.user_id ORDER BY e.instant, e.user_id`,
      [mark.since, mark.now, limit],
    );
    const instants = new Set(rows.map((row) => row.instant.getTime()));
    const until = instants.size < limit ? mark.now : new Date(Math.max(...instants));
    return {
      expiries: rows.map((row) => ({
        instant: row.instant,
        user_id: Number(row.user_id),
        devices: row.devices.map(Number),
      })),
      until,
    };
  }

  async announcedUntil(tx: Tx, until: Date): Promise<void> {
    await tx.write(ANNOUNCEMENTS, 'UPDATE access_expiry_announcements SET announced_until = $1', [until]);
  }
}
