import { Logger } from '@nestjs/common';
import { CacheAside } from '../../src/platform/cache/cache-aside.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import type { CacheEntry } from '../../src/platform/cache/cache-store.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import { objectOf } from '../../src/platform/cache/decode.js';
import { MemoryCacheStore } from '../../src/platform/cache/memory-cache-store.js';

class Quiet extends Logger {
  override warn(): void {}
}
/** A shared (`redis`) store in memory whose n-th setManyIfNotOlder is refused. */
class Store extends MemoryCacheStore {
  override readonly kind = 'redis' as never;
  calls: number[] = [];
  refuse = -1;
  override setManyIfNotOlder(entries: readonly (readonly [string, CacheEntry])[], ttl: number): Promise<void> {
    this.calls.push(entries.length);
    if (this.calls.length === this.refuse) return Promise.reject(new Error('refused'));
    return super.setManyIfNotOlder(entries, ttl);
  }
}
const entry = (id: number, version: number, name = 'new'): CacheEntry => ({
  version,
  deleted: false,
  json: JSON.stringify({ id, name }),
});

function setup() {
  const store = new Store(10_000);
  const service = new CacheService(store, 60_000, 50, new Quiet('c'));
  const entries = new CacheEntries(service);
  const aside = new CacheAside<{ id: number; name: string }>(
    entries,
    (id) => `u:${id}`,
    () => Promise.resolve(undefined),
    objectOf({ id: 'number', name: 'string' }),
  );
  return { store, service, entries, aside };
}

describe("CacheAside.refreshMany (a changed group's members)", () => {
  it('sends 250 per call, keeps newer versions', async () => {
    const { store, entries, aside } = setup();
    await store.setIfNotOlder('u:3', entry(3, 9, 'newer'), 60_000);
    await aside.refreshMany(Array.from({ length: 600 }, (_, i) => [i, entry(i, 5)] as const));
    expect(store.calls).toEqual([250, 250, 100]);
    expect((await entries.get('u:3')).entry?.version).toBe(9);
    expect((await entries.get('u:4')).entry?.version).toBe(5);
    // an older fill after the rebuild is refused
    await entries.put('u:4', entry(4, 4, 'old'), false);
    expect((await entries.get('u:4')).entry?.json).toContain('new');
  });

  it('a refused middle batch is a lost write: the cache is dropped before reads trust it', async () => {
    const { store, service, entries, aside } = setup();
    store.refuse = 2;
    await aside.refreshMany(Array.from({ length: 600 }, (_, i) => [i, entry(i, 5)] as const));
    expect(store.calls).toEqual([250, 250, 100]);
    expect(service.stats.lost_writes).toBe(1);
    expect((await entries.get('u:1')).ok).toBe(false);
  });
});
