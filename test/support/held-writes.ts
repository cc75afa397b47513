import pg from 'pg';
import { testDatabaseUrl } from './test-env.js';

/**
 * A connection of the spec's own that holds rows a write needs, so the write waits at a known
 * statement, and gates on who waits for whom (`pg_blocking_pids`): races shown without timers.
 */
export interface HeldWrites {
  /** The spec's connection (BEGIN, lock rows, COMMIT through it). */
  readonly client: pg.Client;
  /** Its backend's pid: a write held by it waits for this pid. */
  readonly pid: number;
  /** Resolves with the pids waiting for `pid`'s locks once there are `count` of them. */
  waitingFor(pid: number, what: string, count?: number): Promise<number[]>;
  /**
   * Holds the next write bumping `userId`'s projection `scope` (`user` for a change of a group's
   * rights, `user_groups` for one of its members) at that bump, its last statement, until `release`.
   */
  holdBumpOf(userId: number, scope?: string): Promise<{ release: () => Promise<void> }>;
  end(): Promise<void>;
}

export async function heldWrites(): Promise<HeldWrites> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  const pid = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
  return {
    client,
    pid,
    async waitingFor(blocker, what, count = 1) {
      for (let attempt = 0; attempt < 20_000; attempt += 1) {
        const { rows } = await client.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)) ORDER BY pid',
          [blocker],
        );
        if (rows.length >= count) return rows.map((row) => row.pid);
        await new Promise((resolve) => setImmediate(resolve));
      }
      throw new Error(`${what} never waited`);
    },
    async holdBumpOf(userId, scope = 'user') {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO projection_versions (scope, id, version) VALUES ($2, $1, 1)
         ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version`,
        [userId, scope],
      );
      return { release: async () => void (await client.query('COMMIT')) };
    },
    end: () => client.end(),
  };
}
