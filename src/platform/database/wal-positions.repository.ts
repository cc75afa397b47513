import type { EntityManager } from 'typeorm';

/** A WAL position (`16/B374D848`) as a number that orders like the position. */
export function lsnValue(text: string): bigint {
  const [high = '0', low = '0'] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

/** Where the primary's WAL and a replica's replay stand. */
export const walPositions = {
  /**
   * The primary's WAL flushed to disk. A committed transaction (synchronous_commit on, which the
   * service's connections set) had its commit record flushed before COMMIT returned, so every
   * write whose response was sent, from any instance, lies at or below this position.
   */
  async flushed(primary: EntityManager): Promise<bigint> {
    const [row] = await primary.query<{ lsn: string }[]>('SELECT pg_current_wal_flush_lsn()::text AS lsn');
    return lsnValue(row?.lsn ?? '0/0');
  },

  /** How far a replica has replayed; undefined when it is not replaying at all (promoted, or not a replica). */
  async replayed(replica: EntityManager): Promise<bigint | undefined> {
    const [row] = await replica.query<{ lsn: string | null }[]>(
      'SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()::text END AS lsn',
    );
    return row?.lsn === null || row?.lsn === undefined ? undefined : lsnValue(row.lsn);
  },
};
