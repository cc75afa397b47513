import type { CacheEntry } from './cache-store.js';
import { cacheKeys } from './cache-keys.js';
import type { CacheService } from './cache.service.js';

/**
 * Each table's generation in the cache, a counter that only grows: a write bumps the generations
 * of the tables it wrote after its commit, and a list page built under an older one is unusable.
 */
export class TableGenerations {
  constructor(
    readonly cache: CacheService,
    /** Whether list pages are cached (LIST_CACHE); generations are kept either way. */
    readonly listPages = true,
  ) {}

  /** After a commit that wrote these tables. A bump that does not land counts as a lost write. */
  async bump(tables: readonly string[]): Promise<boolean> {
    if (tables.length === 0) return true;
    const names = tables.map((table) => cacheKeys.tableGeneration(table));
    const result = await this.cache.call('incr', names.join(','), (store) => store.bumpGenerations(names), {
      afterWrite: true,
    });
    return result.ok;
  }

  /**
   * The tables' generations now, then the flush generation (`cacheKeys.flushGeneration`, moved by
   * every flush of the whole cache): what a value remembered outside the store is kept under.
   * Undefined when the cache could not be asked.
   */
  async current(tables: readonly string[]): Promise<number[] | undefined> {
    const names = [...tables.map((table) => cacheKeys.tableGeneration(table)), cacheKeys.flushGeneration];
    const result = await this.cache.call('mget', names.join(','), (store) => store.generations(names), {
      lookup: true,
    });
    return result.ok ? result.value : undefined;
  }

  /**
   * A list page's entry with the current generations of its tables, and the flush generation
   * (`flushes`), in one round trip; `ok: false` when the cache could not be asked or list pages
   * are not cached (the page is then read from the database: `bypass`).
   */
  async pageWith(
    key: string,
    tables: readonly string[],
  ): Promise<{ ok: boolean; entry: CacheEntry | undefined; generations: number[]; flushes?: number }> {
    if (!this.listPages) return { ok: false, entry: undefined, generations: [] };
    const names = [...tables.map((table) => cacheKeys.tableGeneration(table)), cacheKeys.flushGeneration];
    const result = await this.cache.call('get', key, (store) => store.getWithGenerations(key, names), {
      lookup: true,
    });
    if (!result.ok) return { ok: false, entry: undefined, generations: [] };
    const { entry, generations } = result.value;
    return { ok: true, entry, generations: generations.slice(0, -1), flushes: generations.at(-1) };
  }
}
