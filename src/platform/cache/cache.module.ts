import { Global, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { SETTINGS, type Settings } from '../config/settings.js';
import { CacheCommits } from './cache-commits.js';
import { CacheEntries } from './cache-entries.js';
import { CacheEpoch } from './cache-epoch.js';
import { CacheService } from './cache.service.js';
import { MemoryCacheStore } from './memory-cache-store.js';
import { RedisCacheStore } from './redis-cache-store.js';
import { TableGenerations } from './table-generations.js';

/** The cache the settings ask for (the CLI builds one too, to drop entries its writes made stale). */
export function createCacheService(settings: Settings, logger: Logger = new Logger('Cache')): CacheService {
  const store =
    settings.redisUrl === undefined
      ? new MemoryCacheStore()
      : new RedisCacheStore(settings.redisUrl, settings.cacheKeyPrefix, logger);
  return new CacheService(store, settings.cacheTtlSeconds * 1000, settings.cacheTimeoutMs, logger);
}

/** Redis through `@keyv/redis` when REDIS_URL is set, an in-process store otherwise. */
@Global()
@Module({
  providers: [
    {
      provide: CacheService,
      inject: [SETTINGS],
      useFactory: (settings: Settings) => createCacheService(settings),
    },
    { provide: CacheEntries, inject: [CacheService], useFactory: (cache: CacheService) => new CacheEntries(cache) },
    {
      provide: TableGenerations,
      inject: [CacheService, SETTINGS],
      useFactory: (cache: CacheService, settings: Settings) => new TableGenerations(cache, settings.listCache),
    },
    CacheEpoch,
    CacheCommits,
  ],
  exports: [CacheService, CacheEntries, TableGenerations, CacheEpoch],
})
export class CacheModule implements OnApplicationShutdown {
  constructor(private readonly moduleRef: ModuleRef) {}

  async onApplicationShutdown(): Promise<void> {
    await this.moduleRef.get(CacheService).close();
  }
}
