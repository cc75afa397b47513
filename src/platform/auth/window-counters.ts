import { Injectable } from '@nestjs/common';
import type { WindowCount } from '../cache/cache-store.js';
import { CacheService } from '../cache/cache.service.js';
import { MemoryCacheStore } from '../cache/memory-cache-store.js';

/**
 * Fixed-window counters for the rate limits of part 10, shared by every instance through the
 * cache; while it cannot be asked each instance counts on its own, so a limit still holds per
 * instance.
 */
@Injectable()
export class WindowCounters {
  private readonly local = new MemoryCacheStore(10_000);

  constructor(private readonly cache: CacheService) {}

  async increment(key: string, windowMs: number, by = 1): Promise<WindowCount> {
    const result = await this.cache.call('incr', key, (store) => store.increment(key, windowMs, by));
    return result.ok ? result.value : this.local.increment(key, windowMs, by);
  }
}
