import { Logger } from '@nestjs/common';
import { createCacheService } from '../platform/cache/cache.module.js';
import { TableGenerations } from '../platform/cache/table-generations.js';
import type { Settings } from '../platform/config/settings.js';

/** Nest's logger writes warnings to stdout, which a command keeps for its result. */
class QuietLogger extends Logger {
  override log(): void {}
  override warn(): void {}
  override error(): void {}
}

/**
 * Drops what the running servers cached through Redis: the given tables' list pages, or
 * everything. False when Redis could not be reached (ServerCaches then falls back to the epoch).
 */
export async function tellRedis(settings: Settings, tables: readonly string[] | undefined): Promise<boolean> {
  // A command may wait for Redis (a cluster's slot map takes a few round trips to learn), and
  // its stdout carries only the result: the cache's own log lines are dropped, the outcome is said by the caller.
  const cache = createCacheService(
    { ...settings, cacheTimeoutMs: Math.max(settings.cacheTimeoutMs, 3000) },
    new QuietLogger('Cache'),
  );
  try {
    return tables === undefined ? await cache.invalidateAll() : await new TableGenerations(cache).bump(tables);
  } finally {
    await cache.close();
  }
}
