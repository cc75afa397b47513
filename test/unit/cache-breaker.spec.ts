import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { CacheEntry, CacheStore, WindowCount } from '../../src/platform/cache/cache-store.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import { MemoryCacheStore } from '../../src/platform/cache/memory-cache-store.js';
import { loadSettings } from '../../src/platform/config/settings.js';
import { runInRequestContext, type RequestCacheWork } from '../../src/platform/http/request-context.js';
import { wholeCache, type WholeCache } from '../support/whole-cache.js';

/*
 * The cache service's circuit breaker and dirty-flush rule, through a store that fails on command.
 * The breaker reads Date.now() and every call races a setTimeout budget, so time is Jest's fake
 * clock: a timeout happens when the test advances the clock, never by waiting.
 */

const settings = loadSettings({});
const TTL_MS = settings.cacheTtlSeconds * 1000;
const BUDGET_MS = settings.cacheTimeoutMs;
// The service's own constants (not exported): three consecutive failures open it for one second,
// and a flush has a budget of its own, ten times the call budget but at least 500 ms.
const OPEN_FOR_MS = 1000;
const FLUSH_BUDGET_MS = Math.max(BUDGET_MS * 10, 500);

type Mode = 'answer' | 'refuse' | 'hang' | 'slow';

/** How long a store in mode `slow` takes to answer, on the fake clock. */
const SLOW_MS = 40;

/** A promise the test settles by hand. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((res) => (resolve = res));
  return { promise, resolve };
}

/**
 * A shared store (kind `redis`, so the service guards it) holding its data in memory. `mode`
 * decides how the next calls go: answered, refused at once (an error), or never answered (only
 * the budget ends them). `flushAll` can be parked to catch the service mid-flush.
 */
class FlakyStore implements CacheStore {
  readonly kind = 'redis' as const;
  mode: Mode = 'answer';
  /** Calls that reached the store, by method. */
  readonly calls = new Map<string, number>();
  /** Times the service told the store that a call failed. */
  failedNotices = 0;
  readonly data = new MemoryCacheStore();
  private flushHold: { arrived: () => void; wait: Promise<void> } | undefined;

  count(method: string): number {
    return this.calls.get(method) ?? 0;
  }

  /** Parks the next flushAll that is answered; `arrived` once it is at the gate. */
  holdNextFlush(): { arrived: Promise<void>; release(): void } {
    const arrival = deferred();
    const gate = deferred();
    this.flushHold = { arrived: arrival.resolve, wait: gate.promise };
    return { arrived: arrival.promise, release: gate.resolve };
  }

  get(key: string): Promise<CacheEntry | undefined> {
    return this.run('get', () => this.data.get(key));
  }

  getMany(keys: readonly string[]): Promise<(CacheEntry | undefined)[]> {
    return this.run('getMany', () => this.data.getMany(keys));
  }

  setIfNotOlder(key: string, entry: CacheEntry, ttlMs: number): Promise<boolean> {
    return this.run('setIfNotOlder', () => this.data.setIfNotOlder(key, entry, ttlMs));
  }

  setManyIfNotOlder(entries: readonly (readonly [string, CacheEntry])[], ttlMs: number): Promise<void> {
    return this.run('setManyIfNotOlder', () => this.data.setManyIfNotOlder(entries, ttlMs));
  }

  deleteIfSame(key: string, entry: CacheEntry): Promise<boolean> {
    return this.run('deleteIfSame', () => this.data.deleteIfSame(key, entry));
  }

  tombstoneByPrefix(keyPrefix: string): Promise<number> {
    return this.run('tombstoneByPrefix', () => this.data.tombstoneByPrefix(keyPrefix));
  }

  flushAll(): Promise<void> {
    return this.run('flushAll', async () => {
      const hold = this.flushHold;
      this.flushHold = undefined;
      if (hold !== undefined) {
        hold.arrived();
        await hold.wait;
      }
      await this.data.flushAll();
    });
  }

  increment(key: string, windowMs: number, by?: number): Promise<WindowCount> {
    return this.run('increment', () => this.data.increment(key, windowMs, by));
  }

  bumpGenerations(names: readonly string[]): Promise<void> {
    return this.run('bumpGenerations', () => this.data.bumpGenerations(names));
  }

  generations(names: readonly string[]): Promise<number[]> {
    return this.run('generations', () => this.data.generations(names));
  }

  getWithGenerations(
    key: string,
    names: readonly string[],
  ): Promise<{ entry: CacheEntry | undefined; generations: number[] }> {
    return this.run('getWithGenerations', () => this.data.getWithGenerations(key, names));
  }

  ping(): Promise<void> {
    return this.run('ping', () => this.data.ping());
  }

  failed(): void {
    this.failedNotices += 1;
  }

  close(): Promise<void> {
    return this.data.close();
  }

  private run<T>(method: string, call: () => Promise<T>): Promise<T> {
    this.calls.set(method, this.count(method) + 1);
    switch (this.mode) {
      case 'refuse':
        return Promise.reject(new Error('CLUSTERDOWN The cluster is down'));
      case 'hang':
        return new Promise<T>(() => undefined);
      case 'slow':
        return new Promise<void>((resolve) => setTimeout(resolve, SLOW_MS)).then(call);
      case 'answer':
        return call();
    }
  }
}

/** Keeps the service's warnings for assertions instead of printing them. */
class RecordingLogger extends Logger {
  readonly warnings: unknown[] = [];

  override warn(message: unknown): void {
    this.warnings.push(message);
  }
}

const entry: CacheEntry = { version: 1, deleted: false, json: '{"id":1}' };
const bypass = { ok: false, entry: undefined };

/** Runs pending promise continuations (setImmediate stays real; the clock does not move). */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function setup() {
  const store = new FlakyStore();
  const logger = new RecordingLogger('Cache');
  const cache = wholeCache(new CacheService(store, TTL_MS, BUDGET_MS, logger));
  return { store, logger, cache };
}

/** A read the store never answers: it fails when the budget runs out on the fake clock. */
async function timedOutGet(cache: WholeCache, key = 'k'): Promise<{ ok: boolean; entry: CacheEntry | undefined }> {
  const read = cache.get(key);
  await jest.advanceTimersByTimeAsync(BUDGET_MS);
  return read;
}

/**
 * Three reads the store never answers: the circuit opens. (Timeouts, because after a refusal the
 * next reads no longer reach the store at all: they bypass it and start a flush, see below.)
 */
async function openCircuit(store: FlakyStore, cache: WholeCache): Promise<void> {
  store.mode = 'hang';
  for (let failure = 0; failure < 3; failure += 1) expect(await timedOutGet(cache)).toEqual(bypass);
  store.mode = 'answer';
}

beforeEach(() => {
  jest.useFakeTimers({ doNotFake: ['setImmediate'] });
});

afterEach(() => {
  jest.useRealTimers();
});

describe('CacheService circuit breaker', () => {
  it('three consecutive failures (here timeouts) open it; while open, reads answer bypass without asking the store', async () => {
    const { store, logger, cache } = setup();
    store.mode = 'hang';
    expect(await timedOutGet(cache)).toEqual(bypass);
    expect(await timedOutGet(cache)).toEqual(bypass);
    expect(logger.warnings).toHaveLength(2);
    expect(await timedOutGet(cache)).toEqual(bypass);
    expect(logger.warnings[2]).toMatchObject({ msg: 'cache call failed; circuit open, serving from the database' });
    expect(cache.stats).toMatchObject({ failures: 3, timeouts: 3, short_circuited: 0 });
    expect(store.failedNotices).toBe(3);

    // The store answers again, but the circuit spares it for the open second.
    store.mode = 'answer';
    expect(await cache.get('k')).toEqual(bypass);
    expect(await cache.getMany(['a', 'b'])).toEqual({ ok: false, entries: [undefined, undefined] });
    expect(await cache.tableGenerations(['users'])).toBeUndefined();
    expect(await cache.listPage('list:x', ['users'])).toEqual({ ok: false, entry: undefined, generations: [] });
    // Rate limits are counted on this instance meanwhile.
    expect(await cache.increment('actor-requests:1', 60_000)).toMatchObject({ count: 1 });
    expect(await cache.increment('actor-requests:1', 60_000)).toMatchObject({ count: 2 });

    expect(store.count('get')).toBe(3);
    expect(store.count('getMany') + store.count('generations') + store.count('getWithGenerations')).toBe(0);
    expect(store.count('increment') + store.count('flushAll')).toBe(0);
    expect(cache.stats).toMatchObject({ failures: 3, timeouts: 3, short_circuited: 6, hits: 0, misses: 0 });
  });

  it('stays open for one second, then closes: the opening marked the cache dirty, so the first read flushes it', async () => {
    const { store, cache } = setup();
    await store.data.setIfNotOlder('k', entry, TTL_MS);
    await openCircuit(store, cache);

    jest.advanceTimersByTime(OPEN_FOR_MS - 1);
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(0);

    jest.advanceTimersByTime(1);
    // Closed, but the opening marked the cache dirty: this read starts the flush and still bypasses.
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(1);
    await settled();

    // The entry from before the outage was dropped with everything else: a miss, not a stale hit.
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
    expect(store.count('get')).toBe(4);
    expect(cache.stats).toMatchObject({ failures: 3, misses: 1, short_circuited: 2 });
  });

  it('a success resets the count: failures that are not consecutive never open it', async () => {
    const { store, cache } = setup();
    // Timeouts, because a refusal alone already makes reads bypass (see the dirty rule below).
    store.mode = 'hang';
    expect(await timedOutGet(cache)).toEqual(bypass);
    expect(await timedOutGet(cache)).toEqual(bypass);
    store.mode = 'answer';
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
    store.mode = 'hang';
    expect(await timedOutGet(cache)).toEqual(bypass);
    expect(await timedOutGet(cache)).toEqual(bypass);
    store.mode = 'answer';
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });

    expect(store.count('get')).toBe(6);
    expect(store.count('flushAll')).toBe(0);
    expect(cache.stats).toMatchObject({ failures: 4, timeouts: 4, short_circuited: 0, misses: 2 });
  });

  it('an open circuit costs a write nothing: its work after the commit is sent, not awaited, and counted lost; fills and reads are not sent', async () => {
    const { store, cache } = setup();
    await openCircuit(store, cache);

    expect(await cache.put('k', entry, false)).toBe(false);
    expect(store.count('setIfNotOlder')).toBe(0);

    // The store would never answer: the write's work is not waited for (no clock moves here).
    store.mode = 'hang';
    expect(await cache.put('k', entry, true)).toBe(false);
    expect(await cache.tablesWritten(['users'])).toBe(false);
    // Sent all the same: a paused Redis runs it in its order when it wakes.
    expect(store.count('setIfNotOlder')).toBe(1);
    expect(store.count('bumpGenerations')).toBe(1);
    expect(cache.stats).toMatchObject({ lost_writes: 2, short_circuited: 3 });

    // Lost, so the cache is dirty: once the circuit closes, reads bypass until a flush lands.
    store.mode = 'answer';
    jest.advanceTimersByTime(OPEN_FOR_MS);
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(1);
  });

  it('a failure right after it closes opens it again at once (the count was not reset by time)', async () => {
    const { store, cache } = setup();
    await openCircuit(store, cache);
    jest.advanceTimersByTime(OPEN_FOR_MS);

    // The flush that the closing read starts (the opening marked the cache dirty) is refused: that
    // is failure number four, and the count of consecutive failures was never reset.
    store.mode = 'refuse';
    expect(await cache.get('k')).toEqual(bypass);
    await settled();
    expect(cache.stats.failures).toBe(4);

    store.mode = 'answer';
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(1);
    jest.advanceTimersByTime(OPEN_FOR_MS);
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(2);
    await settled();
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
  });
});

describe('CacheService dirty flush: after a failure that may have lost an invalidation, the store is not trusted until a flush lands', () => {
  it('one refused read (circuit still closed) makes reads bypass until a single flush lands', async () => {
    const { store, cache } = setup();
    await store.data.setIfNotOlder('k', entry, TTL_MS);
    store.mode = 'refuse';
    expect(await cache.get('other')).toEqual(bypass);

    store.mode = 'answer';
    const flush = store.holdNextFlush();
    expect(await cache.get('k')).toEqual(bypass);
    await flush.arrived;
    expect(await cache.get('k')).toEqual(bypass);
    expect(await cache.getMany(['k'])).toEqual({ ok: false, entries: [undefined] });
    // One flush per instance, however many reads arrive while it runs; none of them asked the store.
    expect(store.count('flushAll')).toBe(1);
    expect(store.count('get') + store.count('getMany')).toBe(1);

    flush.release();
    await settled();
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
    expect(store.count('get')).toBe(2);
    expect(cache.stats).toMatchObject({ failures: 1, short_circuited: 3, misses: 1, hits: 0 });
  });

  it('a timed-out read does not mark it dirty; a timed-out after-commit write does (a lost write)', async () => {
    const { store, cache } = setup();
    store.mode = 'hang';
    expect(await timedOutGet(cache)).toEqual(bypass);
    store.mode = 'answer';
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
    expect(store.count('flushAll')).toBe(0);

    store.mode = 'hang';
    const write = cache.put('k', entry, true);
    await jest.advanceTimersByTimeAsync(BUDGET_MS);
    expect(await write).toBe(false);
    expect(cache.stats).toMatchObject({ lost_writes: 1, timeouts: 2 });

    store.mode = 'answer';
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(1);
    await settled();
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
  });

  it('a refused after-commit write (put, putMany, tablesWritten) counts a lost write and marks it dirty', async () => {
    const { store, cache } = setup();
    const rebuilds = [
      () => cache.put('k', entry, true),
      () => cache.putMany([['k', entry]]),
      () => cache.tablesWritten(['users']),
    ];
    for (const [index, rebuild] of rebuilds.entries()) {
      store.mode = 'refuse';
      expect(await rebuild()).toBe(false);
      expect(cache.stats.lost_writes).toBe(index + 1);

      // Not the circuit (one failure): the dirty rule. The read bypasses and starts the flush.
      store.mode = 'answer';
      expect(await cache.get('k')).toEqual(bypass);
      expect(store.count('flushAll')).toBe(index + 1);
      await settled();
      expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
    }
    expect(store.count('get')).toBe(3);
  });

  it('a failure while the flush runs is not covered by it: the next read flushes again', async () => {
    const { store, cache } = setup();
    store.mode = 'refuse';
    expect(await cache.get('k')).toEqual(bypass);
    store.mode = 'answer';
    const flush = store.holdNextFlush();
    expect(await cache.get('k')).toEqual(bypass);
    await flush.arrived;

    // A write's rebuild is refused while the flush is under way: its invalidation may be lost.
    store.mode = 'refuse';
    expect(await cache.put('k', entry, true)).toBe(false);
    store.mode = 'answer';
    flush.release();
    await settled();

    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(2);
    await settled();
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
    expect(store.count('flushAll')).toBe(2);
  });

  it('refusals: a refused read, then two refused flushes open the circuit; the cache stays dirty throughout', async () => {
    const { store, cache } = setup();
    store.mode = 'refuse';
    expect(await cache.get('k')).toEqual(bypass); // failure 1: dirty
    expect(await cache.get('k')).toEqual(bypass); // starts a flush, refused: failure 2
    await settled();
    expect(await cache.get('k')).toEqual(bypass); // another flush, refused: failure 3 opens the circuit
    await settled();
    expect(cache.stats.failures).toBe(3);
    expect(store.count('flushAll')).toBe(2);

    store.mode = 'answer';
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(2); // open: no flush, no read
    jest.advanceTimersByTime(OPEN_FOR_MS);
    expect(await cache.get('k')).toEqual(bypass);
    await settled();
    expect(store.count('flushAll')).toBe(3);
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
    expect(store.count('get')).toBe(2);
  });

  it('a flush that never answers is cut at its own budget and leaves the cache dirty', async () => {
    const { store, cache } = setup();
    store.mode = 'refuse';
    expect(await cache.get('k')).toEqual(bypass);
    store.mode = 'hang';
    expect(await cache.get('k')).toEqual(bypass);
    await jest.advanceTimersByTimeAsync(FLUSH_BUDGET_MS - 1);
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(1); // still the first one
    expect(cache.stats.timeouts).toBe(0);

    await jest.advanceTimersByTimeAsync(1);
    expect(cache.stats.timeouts).toBe(1);
    store.mode = 'answer';
    expect(await cache.get('k')).toEqual(bypass);
    expect(store.count('flushAll')).toBe(2);
    await settled();
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
  });

  it('an explicit invalidateAll covers the marks made before it: no second flush is needed', async () => {
    const { store, cache } = setup();
    await store.data.setIfNotOlder('k', entry, TTL_MS);
    store.mode = 'refuse';
    expect(await cache.get('k')).toEqual(bypass);

    store.mode = 'answer';
    expect(await cache.invalidateAll()).toBe(true);
    expect(await cache.get('k')).toEqual({ ok: true, entry: undefined });
    expect(store.count('flushAll')).toBe(1);
  });
});

/** Runs `fn` as one HTTP request does: its cache calls share one budget (part 7). */
function inRequest<T>(fn: () => Promise<T>): { done: Promise<T>; work: RequestCacheWork } {
  const work: RequestCacheWork = { spentMs: 0 };
  const done = runInRequestContext({ request_id: 'r', ip: '127.0.0.1', actor_id: null, cache: work }, fn);
  return { done, work };
}

describe('One budget per request (part 7)', () => {
  it('a read has what the earlier reads of its request left; cut short there, it bypasses without counting against the store', async () => {
    const { store, cache } = setup();
    store.mode = 'slow';
    const { done, work } = inRequest(async () => {
      const first = await cache.get('a');
      const second = await cache.get('b');
      return [first, second];
    });
    // The first read answers after 40 ms; the second has 10 ms left and the store takes 40.
    await jest.advanceTimersByTimeAsync(SLOW_MS + BUDGET_MS - SLOW_MS);
    expect(await done).toEqual([{ ok: true, entry: undefined }, bypass]);
    expect(work.spentMs).toBeGreaterThanOrEqual(BUDGET_MS);
    expect(cache.stats).toMatchObject({ over_budget: 1, failures: 0, timeouts: 0, lost_writes: 0 });
    // Nothing was held against Redis: the next request reads it.
    expect(store.failedNotices).toBe(0);
  });

  it('a spent budget skips the reads after it: they do not reach the store', async () => {
    const { store, cache } = setup();
    store.mode = 'hang';
    const { done } = inRequest(async () => [await cache.get('a'), await cache.get('b'), await cache.get('c')]);
    await jest.advanceTimersByTimeAsync(BUDGET_MS);
    expect(await done).toEqual([bypass, bypass, bypass]);
    expect(store.count('get')).toBe(1);
    expect(cache.stats).toMatchObject({ timeouts: 1, failures: 1, over_budget: 2 });
  });

  it("a write's work after its commit still waits its own budget after a read of its request timed out (a late answer would be read stale elsewhere)", async () => {
    const { store, cache } = setup();
    store.mode = 'hang';
    const { done } = inRequest(async () => {
      const read = await cache.get('a');
      store.mode = 'slow';
      // The commit happens here: the rebuild answers in 40 ms, and is waited for.
      return { read, put: await cache.put('a', entry, true) };
    });
    await jest.advanceTimersByTimeAsync(BUDGET_MS + SLOW_MS);
    expect(await done).toEqual({ read: bypass, put: true });
    expect(await store.data.get('a')).toEqual(entry);
    expect(cache.stats).toMatchObject({ timeouts: 1, lost_writes: 0 });
  });

  it('a read cut short by what the earlier reads spent does not change what the write after it waits for (found by a review)', async () => {
    const { store, cache } = setup();
    store.mode = 'slow';
    const { done, work } = inRequest(async () => {
      await cache.get('a');
      await cache.get('b');
      return cache.put('a', entry, true);
    });
    await jest.advanceTimersByTimeAsync(SLOW_MS * 4);
    expect(await done).toBe(true);
    expect(cache.stats).toMatchObject({ timeouts: 0, failures: 0, lost_writes: 0, over_budget: 1 });
    // The write's own wait is not the reads' budget.
    expect(work.spentMs).toBeLessThanOrEqual(BUDGET_MS + 1);
  });

  it("a write's work after its commit is not cut by what its reads spent on a store that answered", async () => {
    const { store, cache } = setup();
    store.mode = 'slow';
    const { done } = inRequest(async () => {
      await cache.get('a');
      return cache.put('a', entry, true);
    });
    // The read spent 40 of the 50 ms; the rebuild takes 40 more and is waited for.
    await jest.advanceTimersByTimeAsync(SLOW_MS * 2);
    expect(await done).toBe(true);
    expect(await store.data.get('a')).toEqual(entry);
    expect(cache.stats).toMatchObject({ lost_writes: 0, over_budget: 0, failures: 0 });
  });

  it('a fill after a miss has a budget of its own: cut by what the lookups spent, the next read would miss again', async () => {
    const { store, cache } = setup();
    store.mode = 'slow';
    const { done, work } = inRequest(async () => {
      const miss = await cache.get('a');
      // 10 ms of the request's budget are left; the fill takes 40.
      return { miss, filled: await cache.put('a', entry, false) };
    });
    await jest.advanceTimersByTimeAsync(SLOW_MS * 2);
    expect(await done).toEqual({ miss: { ok: true, entry: undefined }, filled: true });
    expect(await store.data.get('a')).toEqual(entry);
    expect(cache.stats).toMatchObject({ over_budget: 0, timeouts: 0 });
    expect(work.spentMs).toBeLessThan(BUDGET_MS);
  });

  it('calls outside a request (a job, the CLI) each have the whole budget', async () => {
    const { store, cache } = setup();
    store.mode = 'slow';
    const reads = Promise.all([cache.get('a').then(() => cache.get('b'))]);
    await jest.advanceTimersByTimeAsync(SLOW_MS * 2);
    expect(await reads).toEqual([{ ok: true, entry: undefined }]);
    expect(cache.stats).toMatchObject({ over_budget: 0, misses: 2 });
  });
});
