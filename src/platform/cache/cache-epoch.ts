import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CacheService } from './cache.service.js';
import { SETTINGS, type Settings } from '../config/settings.js';

/**
 * The cache epoch in PostgreSQL: the way to drop every instance's cache when the writing instance
 * cannot reach Redis to do it (a partial partition). A write whose cache work after the commit was
 * lost bumps it; every instance checks it every `CACHE_EPOCH_POLL_MS` and drops the shared cache
 * (a generation bump) when it moved, so another instance serves a pre-write entry for at most one
 * poll interval instead of `CACHE_TTL_SECONDS`.
 */
@Injectable()
export class CacheEpoch implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('CacheEpoch');
  private seen: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly cache: CacheService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /** After a lost cache write: tell every instance to drop its cache. Never throws. */
  async bump(): Promise<void> {
    try {
      await this.dataSource.query('UPDATE cache_epoch SET epoch = epoch + 1');
    } catch (error) {
      this.logger.error({
        msg: 'could not bump the cache epoch; other instances may serve stale entries until CACHE_TTL_SECONDS',
        err: error instanceof Error ? error.message : String(error),
      });
    }
  }

  onApplicationBootstrap(): void {
    // Also with an in-process cache: the CLI's writes (seed-demo, bootstrap-admin) move the epoch.
    this.timer = setInterval(() => void this.check(), this.settings.cacheEpochPollMs);
    this.timer.unref();
    void this.check();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const [row] = await this.dataSource.query<{ epoch: string }[]>('SELECT epoch::text AS epoch FROM cache_epoch');
      if (row === undefined) return;
      if (this.seen !== undefined && row.epoch !== this.seen) {
        this.logger.warn({
          msg: 'the cache epoch moved: an instance lost cache writes; dropping the cache',
          epoch: row.epoch,
        });
        await this.cache.invalidateAll();
      }
      this.seen = row.epoch;
    } catch {
      // The database is unreachable: every request answers 503 meanwhile; check again next time.
    } finally {
      this.checking = false;
    }
  }
}
