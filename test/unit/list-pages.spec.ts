import type { EntityManager } from 'typeorm';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import { MemoryCacheStore } from '../../src/platform/cache/memory-cache-store.js';
import { listSpec } from '../../src/platform/http/list/list-spec.js';
import { RawJson } from '../../src/platform/http/responses.js';
import { ListPages } from '../../src/platform/projections/list-pages.js';
// A fake of the projections' two members ListPages uses (the cache and the load), cast once.
import type { Projections } from '../../src/platform/projections/projections.js';
import { wholeCache } from '../support/whole-cache.js';

/*
 * The single-flight of list pages, against a database whose reads we hold open: a read that
 * starts after a write's generation bump must not join a load that began before it.
 */
const SPEC = listSpec({ from: 'things', select: 'id, label', sort: ['id'] });

function fakeDatabase() {
  let label = 'before';
  const held: (() => void)[] = [];
  let hold = false;
  const reader = {
    async query(text: string): Promise<unknown[]> {
      const seen = label; // what the table holds when the statement starts
      if (hold) await new Promise<void>((resolve) => held.push(resolve));
      return /count\(\*\)/.test(text) ? [{ n: 1 }] : [{ id: 1, label: seen }];
    },
  };
  return {
    /** The projections' database side: every load runs on the fake reader. */
    load: (work: (db: EntityManager) => Promise<unknown>) => work(reader as unknown as EntityManager),
    write: (value: string) => (label = value),
    holdReads: (on: boolean) => (hold = on),
    release: () => held.splice(0).forEach((resolve) => resolve()),
  };
}

const labelOf = (items: unknown): string => {
  const rows = (items instanceof RawJson ? JSON.parse(items.json) : items) as { label: string }[];
  return rows[0]?.label ?? '';
};

describe('ListPages single-flight', () => {
  it('a read after a write does not join the load that began before it', async () => {
    const db = fakeDatabase();
    const cache = wholeCache(new CacheService(new MemoryCacheStore(), 60_000, 50));
    const pages = new ListPages({ ...cache, load: db.load } as unknown as Projections);
    db.holdReads(true);
    const early = pages.read(SPEC, {}); // loads 'before', held open
    await new Promise((resolve) => setImmediate(resolve));
    // The write commits, then bumps its table's generation, then answers.
    db.write('after');
    await cache.tablesWritten(['things']);
    db.holdReads(false);
    const late = await pages.read(SPEC, {});
    expect(labelOf(late.items)).toBe('after');
    db.release();
    expect(labelOf((await early).items)).toBe('before');
    // The late page is the one kept: the next read is a hit showing the write.
    const next = await pages.read(SPEC, {});
    expect({ cache: next.cache, label: labelOf(next.items) }).toEqual({ cache: 'hit', label: 'after' });
  });

  it('reads that saw the same generations share one load', async () => {
    const db = fakeDatabase();
    const cache = wholeCache(new CacheService(new MemoryCacheStore(), 60_000, 50));
    const pages = new ListPages({ ...cache, load: db.load } as unknown as Projections);
    db.holdReads(true);
    const reads = [pages.read(SPEC, {}), pages.read(SPEC, {}), pages.read(SPEC, {})];
    await new Promise((resolve) => setImmediate(resolve));
    db.release();
    await Promise.all(reads);
    expect(cache.stats.loads).toBe(1);
  });
});
