import { Global, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { SETTINGS, type Settings } from '../config/settings.js';
import { CacheService } from './cache.service.js';
import { MemoryCacheStore } from './memory-cache-store.js';
import { RedisCacheStore } from './redis-cache-store.js';

/** The cache the settings ask for (the CLI builds one too, to drop entries its writes made stale). */
export function createCacheService(settings: Settings, logger: Logger = new Logger('Cache')): CacheService {
  const store =
    settings.redisUrl === undefined
      ? new MemoryCacheStore()
      : new RedisCacheStore(settings.redisUrl, settings.cacheKeyPrefix, logger);
  return new CacheService(store, settings.cacheTtlSeconds * 1000, settings.cacheTimeoutMs, logger, settings.listCache);
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
  ],
  exports: [CacheService],
})
export class CacheModule implements OnApplicationShutdown {
  constructor(private readonly moduleRef: ModuleRef) {}

  async onApplicationShutdown(): Promise<void> {
    await this.moduleRef.get(CacheService).close();
  }
}
