import type { DataSource, EntityManager } from 'typeorm';
import type { Settings } from '../platform/config/settings.js';
import { createDataSource } from '../platform/database/data-source.js';
import { migrate } from '../platform/database/migrate.js';
import { say } from './command.js';

/** Applies pending migrations first, as `npm start` does: on a fresh clone the CLI may run before the server ever did. */
export async function withDatabase<T>(
  settings: Settings,
  databaseUrl: string,
  work: (dataSource: DataSource) => Promise<T>,
): Promise<T> {
  const applied = await migrate(settings, databaseUrl);
  if (applied.length > 0) say(`applied ${applied.length} migration(s)`);
  const dataSource = createDataSource(settings, databaseUrl, 'admin-api-cli');
  await dataSource.initialize();
  try {
    return await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * What a CLI write does to the running servers' caches. In the write's own transaction it moves
 * the cache epoch, which every instance polls each CACHE_EPOCH_POLL_MS (an in-process cache
 * included), unless Redis can be told more precisely after the commit: `tables` bumps only those
 * tables' list-page generations. A Redis that cannot be reached falls back to the epoch.
 */
export class ServerCaches {
  constructor(
    private readonly settings: Settings,
    private readonly databaseUrl: string,
    /** The tables the write touches; undefined: anything cached may be stale (drop it all). */
    private readonly tables?: readonly string[],
  ) {}

  /** In the write's transaction. */
  async inTransaction(db: EntityManager): Promise<void> {
    if (this.settings.redisUrl === undefined || this.tables === undefined) await moveCacheEpoch(db);
  }

  /** After the commit. */
  async afterCommit(): Promise<void> {
    if (this.settings.redisUrl === undefined) return;
    // Nest's cache and its Redis client are loaded only when there is a Redis to tell.
    const { tellRedis } = await import('./tell-redis.js');
    if (await tellRedis(this.settings, this.tables)) return;
    say('warning: could not reach Redis; running servers drop their cache within CACHE_EPOCH_POLL_MS instead');
    if (this.tables !== undefined)
      await withDatabase(this.settings, this.databaseUrl, (dataSource) => moveCacheEpoch(dataSource.manager));
  }
}

function moveCacheEpoch(db: EntityManager): Promise<unknown> {
  return db.query('UPDATE cache_epoch SET epoch = epoch + 1');
}
