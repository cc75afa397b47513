import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { CacheAside, entryOf } from '../../src/platform/cache/cache-aside.js';
import { cacheKeys } from '../../src/platform/cache/cache-keys.js';
import { UNREADABLE_ENTRY, type CacheEntry } from '../../src/platform/cache/cache-store.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import { objectOf } from '../../src/platform/cache/decode.js';
import { MemoryCacheStore } from '../../src/platform/cache/memory-cache-store.js';
import { loadSettings } from '../../src/platform/config/settings.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { wholeCache } from '../support/whole-cache.js';

/*
 * Races of the cache-aside read path, proven with gates rather than sleeps: the fake database and
 * the store park a call until the test lets it go, so every interleaving below happens in exactly
 * the order the test chooses, on every run.
 */

const settings = loadSettings({});
const TTL_MS = settings.cacheTtlSeconds * 1000;

interface User {
  readonly id: number;
  readonly name: string;
  readonly version: number;
  readonly is_deleted?: boolean;
}

const decodeUser = objectOf<User>({ id: 'number', name: 'string', version: 'number' });
const keyOf = (id: number): string => cacheKeys.resource('user', id);

/** A promise the test settles by hand. */
interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A call parked at a gate: `arrived` once it reached it, then held until `release` (or `fail`). */
interface Parked {
  readonly arrived: Promise<void>;
  release(): void;
  fail(error: unknown): void;
}

function parking(): Parked & { readonly wait: Promise<void>; arrive(): void } {
  const arrival = deferred();
  const gate = deferred();
  return {
    arrived: arrival.promise,
    wait: gate.promise,
    arrive: () => arrival.resolve(),
    release: () => gate.resolve(),
    fail: (error) => gate.reject(error),
  };
}

/** Runs every pending promise continuation (the store and the fake database only use microtasks). */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The table the loader reads. A load takes its snapshot when it is called (as a statement does)
 * and, when the test parked it, answers only when released: a slow SELECT of an old row.
 */
function database(...initial: User[]) {
  const rows = new Map(initial.map((row) => [row.id, row]));
  const holds: (Parked & { readonly wait: Promise<void>; arrive(): void })[] = [];
  const load = jest.fn(async (id: number): Promise<CacheEntry | undefined> => {
    const snapshot = rows.get(id);
    const hold = holds.shift();
    if (hold !== undefined) {
      hold.arrive();
      await hold.wait;
    }
    return snapshot === undefined ? undefined : entryOf(snapshot);
  });
  return {
    load,
    /** Parks the next load after it took its snapshot. */
    holdNextLoad(): Parked {
      const hold = parking();
      holds.push(hold);
      return hold;
    },
    /** Commits a new version of the row and answers the entry the write's refresh stores. */
    write(id: number, name: string): CacheEntry {
      const current = rows.get(id);
      if (current === undefined) throw new Error(`no row ${id}`);
      const next = { ...current, name, version: current.version + 1 };
      rows.set(id, next);
      return entryOf(next);
    },
  };
}

/** `answer`: a get that has read the store and is on its way back (a reply still on the wire). */
type StoreCall = 'get' | 'answer' | 'setIfNotOlder' | 'deleteIfSame';

/** The in-process store, with calls the test can park: a slow round trip at a chosen moment. */
class GatedStore extends MemoryCacheStore {
  private readonly parked: {
    readonly call: StoreCall;
    readonly when: (key: string, entry: CacheEntry | undefined) => boolean;
    readonly hold: Parked & { readonly wait: Promise<void>; arrive(): void };
  }[] = [];

  /** Parks the next `call` for which `when` holds. */
  park(call: StoreCall, when: (key: string, entry: CacheEntry | undefined) => boolean = () => true): Parked {
    const hold = parking();
    this.parked.push({ call, when, hold });
    return hold;
  }

  override async get(key: string): Promise<CacheEntry | undefined> {
    await this.pass('get', key, undefined);
    const entry = await super.get(key);
    await this.pass('answer', key, entry);
    return entry;
  }

  override async setIfNotOlder(key: string, entry: CacheEntry, ttlMs: number): Promise<boolean> {
    await this.pass('setIfNotOlder', key, entry);
    return super.setIfNotOlder(key, entry, ttlMs);
  }

  override async deleteIfSame(key: string, entry: CacheEntry): Promise<boolean> {
    await this.pass('deleteIfSame', key, entry);
    return super.deleteIfSame(key, entry);
  }

  /** What the store holds now, past every gate. */
  peek(key: string): Promise<CacheEntry | undefined> {
    return super.get(key);
  }

  private async pass(call: StoreCall, key: string, entry: CacheEntry | undefined): Promise<void> {
    const index = this.parked.findIndex((parked) => parked.call === call && parked.when(key, entry));
    const [parked] = index === -1 ? [] : this.parked.splice(index, 1);
    if (parked === undefined) return;
    parked.hold.arrive();
    await parked.hold.wait;
  }
}

/** The cache service's warnings are expected here; kept off the console. */
class QuietLogger extends Logger {
  override warn(): void {}
}

/**
 * A first read whose load is held, then a second read whose lookup is sent and held while that
 * load is under way: the interleaving the "looks again" rule is about. The test releases both.
 */
async function lookupDuringLoad(
  store: ReturnType<typeof setup>['store'],
  db: ReturnType<typeof setup>['db'],
  users: ReturnType<typeof setup>['users'],
) {
  const slowLoad = db.holdNextLoad();
  const first = users.get(1);
  await slowLoad.arrived;
  const slowLookup = store.park('answer');
  const late = users.get(1);
  await slowLookup.arrived;
  return { slowLoad, first, slowLookup, late };
}

function setup(...rows: User[]) {
  const store = new GatedStore();
  const cache = wholeCache(new CacheService(store, TTL_MS, settings.cacheTimeoutMs, new QuietLogger('Cache')));
  const db = database(...rows);
  const users = new CacheAside<User>(cache.entries, keyOf, db.load, decodeUser, (user) => user.id);
  return { store, cache, db, users };
}

const alice: User = { id: 1, name: 'alice', version: 1 };
const bobAtVersion1: User = { id: 2, name: 'bob', version: 1 };

describe('CacheAside single-flight: concurrent misses of one key share one load per instance', () => {
  it('ten concurrent misses call the loader once, and every reader gets the same value', async () => {
    const { cache, db, users } = setup(alice);
    const load = db.holdNextLoad();
    const reads = Array.from({ length: 10 }, () => users.get(1));
    await load.arrived;
    // Every read has asked the cache and found nothing while the one load is still under way.
    await settled();
    expect(db.load).toHaveBeenCalledTimes(1);
    expect(cache.stats.misses).toBe(10);

    load.release();
    const results = await Promise.all(reads);
    for (const result of results) {
      expect(result?.value).toEqual(alice);
      expect(result?.entry.version).toBe(1);
      expect(result?.cache).toBe('miss');
    }
    expect(cache.stats.loads).toBe(1);

    // The load filled the cache: the next read is a hit and loads nothing.
    expect(await users.get(1)).toMatchObject({ value: alice, cache: 'hit' });
    expect(db.load).toHaveBeenCalledTimes(1);
  });

  it('a miss whose lookup was on the wire while the load finished takes that load, not one of its own', async () => {
    const { store, cache, db, users } = setup(alice);
    // The second read's lookup is sent, then held (a slow round trip) past the first read's load.
    const slowLookup = store.park('answer');
    const late = users.get(1);
    await slowLookup.arrived;
    expect(await users.get(1)).toMatchObject({ value: alice, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(1);
    expect((await store.peek(keyOf(1)))?.version).toBe(1);
    // Its reply says what the store held when it was asked: nothing. The load it missed serves it.
    slowLookup.release();
    expect(await late).toMatchObject({ value: alice, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(1);
    expect(cache.stats.loads).toBe(1);
  });

  it('a load that began before the lookup was sent is never taken: it may have read before a write', async () => {
    const { store, db, users } = setup(alice);
    const slowLoad = db.holdNextLoad();
    const first = users.get(1);
    await slowLoad.arrived;
    // A write commits while the first load (its snapshot taken) is still under way.
    const written = db.write(1, 'alice v2');
    // The second read's lookup is sent now, reads nothing, and comes back only after that load ended.
    const slowLookup = store.park('answer');
    const second = users.get(1);
    await slowLookup.arrived;
    // The write answers once its refresh is in the cache, as every write does.
    await users.refresh(1, written);
    slowLoad.release();
    expect(await first).toMatchObject({ value: { name: 'alice', version: 1 } });
    slowLookup.release();
    // Not the first load's version 1: the cache, asked once more, holds the write's version 2.
    expect(await second).toMatchObject({ value: { name: 'alice v2', version: 2 }, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(1);
  });

  it('a miss sent after a load began and answered after its fill looks again and takes the fill: one load', async () => {
    const { store, cache, db, users } = setup(alice);
    const { slowLoad, first, slowLookup, late } = await lookupDuringLoad(store, db, users);
    slowLoad.release();
    expect(await first).toMatchObject({ value: alice, cache: 'miss' });
    slowLookup.release();
    expect(await late).toMatchObject({ value: alice, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(1);
    expect(cache.stats.loads).toBe(1);
  });

  it('the second lookup finding nothing readable loads (a corrupted or foreign entry is never served)', async () => {
    const { store, db, users } = setup(alice);
    const { slowLoad, first, slowLookup, late } = await lookupDuringLoad(store, db, users);
    slowLoad.release();
    await first;
    // Between the fill and the second lookup, the entry is replaced by another record's.
    await store.setIfNotOlder(keyOf(1), { version: 5, deleted: false, json: JSON.stringify(bobAtVersion1) }, TTL_MS);
    slowLookup.release();
    expect(await late).toMatchObject({ value: alice, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(2);
  });

  it('a read asked after the last load finished loads again on a miss (no result from before it)', async () => {
    const { store, db, users } = setup(alice);
    await users.get(1);
    const filled = await store.peek(keyOf(1));
    if (filled === undefined) throw new Error('the first read filled nothing');
    await store.deleteIfSame(keyOf(1), filled);
    db.write(1, 'alice v2');
    expect(await users.get(1)).toMatchObject({ value: { name: 'alice v2', version: 2 }, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(2);
  });

  it('two CacheAside instances over one cache each load once (single-flight is per instance)', async () => {
    const { cache, db } = setup(alice);
    const first = new CacheAside<User>(cache.entries, keyOf, db.load, decodeUser);
    const second = new CacheAside<User>(cache.entries, keyOf, db.load, decodeUser);
    const loadOne = db.holdNextLoad();
    const loadTwo = db.holdNextLoad();
    const reads = [1, 2, 3].flatMap(() => [first.get(1), second.get(1)]);
    await Promise.all([loadOne.arrived, loadTwo.arrived]);
    await settled();
    expect(db.load).toHaveBeenCalledTimes(2);

    loadOne.release();
    loadTwo.release();
    const results = await Promise.all(reads);
    expect(results.map((result) => result?.value.name)).toEqual(Array.from({ length: 6 }, () => 'alice'));
    expect(cache.stats.loads).toBe(2);
  });

  it('a failed load fails every reader that joined it, and is not remembered: the next read loads again', async () => {
    const { cache, db, users } = setup(alice);
    const load = db.holdNextLoad();
    const reads = [users.get(1), users.get(1), users.get(1)];
    await load.arrived;
    await settled();
    const outage = new Error('connection reset');
    load.fail(outage);
    const outcomes = await Promise.allSettled(reads);
    expect(outcomes).toEqual([
      { status: 'rejected', reason: outage },
      { status: 'rejected', reason: outage },
      { status: 'rejected', reason: outage },
    ]);
    expect(db.load).toHaveBeenCalledTimes(1);

    expect(await users.get(1)).toMatchObject({ value: alice, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(2);
    expect(cache.stats.loads).toBe(2);
  });
});

describe('CacheAside version compare-and-set: a slow fill never replaces a newer entry', () => {
  it('a load that read version 1 returns after the write refreshed version 2: the cache keeps version 2', async () => {
    const { store, db, users } = setup(alice);
    const slowLoad = db.holdNextLoad();
    const staleRead = users.get(1);
    await slowLoad.arrived; // its snapshot holds version 1

    const refreshed = db.write(1, 'alice-renamed');
    await users.refresh(1, refreshed);
    expect(await store.peek(keyOf(1))).toEqual(refreshed);

    slowLoad.release();
    // The read began before the write committed: it may answer what it read …
    expect(await staleRead).toMatchObject({ value: { version: 1, name: 'alice' }, cache: 'miss' });
    // … but its fill was refused: the newer entry stays.
    expect(await store.peek(keyOf(1))).toEqual(refreshed);
    expect(await users.get(1)).toMatchObject({ value: { version: 2, name: 'alice-renamed' }, cache: 'hit' });
    expect(db.load).toHaveBeenCalledTimes(1);
  });

  it('a fill of version 1 that reaches the store after the refresh of version 2 is refused', async () => {
    const { store, db, users } = setup(alice);
    const slowFill = store.park('setIfNotOlder', (_, entry) => entry?.version === 1);
    const staleRead = users.get(1);
    await slowFill.arrived; // the load finished with version 1; its set is on the way

    const refreshed = db.write(1, 'alice-renamed');
    await users.refresh(1, refreshed);
    slowFill.release();
    await staleRead;

    expect(await store.peek(keyOf(1))).toEqual(refreshed);
    expect(await users.get(1)).toMatchObject({ value: { version: 2 }, cache: 'hit' });
  });

  it('a fill that lands before the refresh is replaced by it (a newer version always wins)', async () => {
    const { store, db, users } = setup(alice);
    expect(await users.get(1)).toMatchObject({ value: { version: 1 }, cache: 'miss' });
    await users.refresh(1, db.write(1, 'alice-renamed'));
    expect(await store.peek(keyOf(1))).toMatchObject({ version: 2 });
    expect(await users.get(1)).toMatchObject({ value: { version: 2, name: 'alice-renamed' }, cache: 'hit' });
  });
});

describe('CacheAside tombstones: an invalidation keeps its version, holds no data', () => {
  it('a read that finds a tombstone and joins a load from before the write reads again on its own', async () => {
    const { store, cache, db, users } = setup(alice);
    const oldLoad = db.holdNextLoad();
    const before = users.get(1); // a miss whose load reads version 1
    await oldLoad.arrived;

    // A bulk write commits version 2 and only marks the entry stale.
    const written = db.write(1, 'alice-bulk');
    await users.invalidate(new Map([[1, written.version]]));
    expect(await store.peek(keyOf(1))).toEqual({ version: 2, deleted: false, json: '' });

    const after = users.get(1); // finds the tombstone, joins the load under way
    await settled();
    expect(db.load).toHaveBeenCalledTimes(1);

    oldLoad.release();
    const [early, late] = await Promise.all([before, after]);
    expect(early).toMatchObject({ value: { version: 1 }, cache: 'miss' });
    // The joined load came back older than the tombstone: the late read loaded version 2 itself.
    expect(late).toMatchObject({ value: { version: 2, name: 'alice-bulk' }, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(2);
    expect(cache.stats.loads).toBe(2);
    // The old load's fill was refused by the tombstone; the late read's fill replaced it.
    expect(await store.peek(keyOf(1))).toEqual(written);
    expect(await users.get(1)).toMatchObject({ value: { version: 2 }, cache: 'hit' });
  });

  it('a tombstone is a miss: the read loads and its fill at the same version replaces the tombstone', async () => {
    const { store, db, users } = setup(alice);
    await users.get(1);
    const written = db.write(1, 'alice-bulk');
    await users.invalidate(new Map([[1, written.version]]));

    expect(await users.get(1)).toMatchObject({ value: { version: 2, name: 'alice-bulk' }, cache: 'miss' });
    expect(await store.peek(keyOf(1))).toEqual(written);
    expect(await users.get(1)).toMatchObject({ cache: 'hit' });
    expect(db.load).toHaveBeenCalledTimes(2);
  });

  it('a fill older than the tombstone is refused, so the entry stays a miss until a current fill', async () => {
    const { store, cache } = setup(alice);
    await cache.putMany([[keyOf(1), { version: 5, deleted: false, json: '' }]]);
    expect(await cache.put(keyOf(1), entryOf({ ...alice, version: 4 }), false)).toBe(true);
    // `put` reports that the store answered, not that it stored: the version-4 fill did not land.
    expect(await store.peek(keyOf(1))).toEqual({ version: 5, deleted: false, json: '' });
  });

  it('dropping a kind of entries (a triggered rebuild) tombstones each at its version', async () => {
    const bob: User = { id: 2, name: 'bob', version: 7 };
    const { store, cache, db, users } = setup(alice, bob);
    await Promise.all([users.get(1), users.get(2)]);
    expect(await cache.dropByPrefix('res:user:')).toBe(2);
    expect(await store.peek(keyOf(1))).toEqual({ version: 1, deleted: false, json: '' });
    expect(await store.peek(keyOf(2))).toEqual({ version: 7, deleted: false, json: '' });

    expect(await users.get(2)).toMatchObject({ value: bob, cache: 'miss' });
    expect(db.load).toHaveBeenCalledTimes(3);
  });

  it('a soft-deleted record is cached like any other, with deleted: true on its entry', async () => {
    const gone: User = { id: 3, name: 'carol', version: 4, is_deleted: true };
    const { db, users } = setup(gone);
    expect(await users.get(3)).toMatchObject({ value: gone, entry: { version: 4, deleted: true }, cache: 'miss' });
    expect(await users.get(3)).toMatchObject({ entry: { deleted: true }, cache: 'hit' });
    expect(db.load).toHaveBeenCalledTimes(1);
  });

  it('a record that does not exist is not cached: each read asks the database', async () => {
    const { store, db, users } = setup(alice);
    expect(await users.get(404)).toBeUndefined();
    expect(await users.get(404)).toBeUndefined();
    expect(db.load).toHaveBeenCalledTimes(2);
    expect(await store.peek(keyOf(404))).toBeUndefined();
  });
});

describe('CacheAside unreadable entries: an entry that does not decode is a miss', () => {
  it.each<[string, CacheEntry]>([
    ['truncated JSON', { version: 1, deleted: false, json: '{"id":1,"na' }],
    ['JSON of the wrong shape', { version: 1, deleted: false, json: '{"id":"1","name":"alice","version":1}' }],
    ['another record under this key', entryOf(bobAtVersion1)],
    ['a stored value that is not an entry at all', { ...UNREADABLE_ENTRY, raw: 'garbage' }],
    // With a version above the record's every fill would be refused, were it not dropped first.
    ['a readable-looking entry at a version above the record’s', { version: 99, deleted: false, json: '[]' }],
  ])('%s: counted, dropped, loaded and refilled; the next read is a hit', async (_, unreadable) => {
    const { store, cache, db, users } = setup(alice);
    await store.setIfNotOlder(keyOf(1), unreadable, TTL_MS);

    expect(await users.get(1)).toMatchObject({ value: alice, cache: 'miss' });
    expect(cache.stats.unreadable).toBe(1);
    expect(await store.peek(keyOf(1))).toEqual(entryOf(alice));
    expect(await users.get(1)).toMatchObject({ value: alice, cache: 'hit' });
    expect(db.load).toHaveBeenCalledTimes(1);
    expect(cache.stats.unreadable).toBe(1);
  });

  it('the drop removes only the entry it found: a write that replaced it meanwhile stays', async () => {
    const { store, db, users } = setup(alice);
    await store.setIfNotOlder(keyOf(1), { version: 1, deleted: false, json: '{"id":1' }, TTL_MS);
    const drop = store.park('deleteIfSame');
    const load = db.holdNextLoad();
    const read = users.get(1);
    await drop.arrived;

    const refreshed = db.write(1, 'alice-renamed');
    await users.refresh(1, refreshed);
    drop.release();
    await load.arrived;
    // The compare-and-delete saw another entry and left it alone.
    expect(await store.peek(keyOf(1))).toEqual(refreshed);

    load.release();
    expect(await read).toMatchObject({ value: { version: 2 }, cache: 'miss' });
    expect(await users.get(1)).toMatchObject({ value: { version: 2 }, cache: 'hit' });
  });

  it('a projection loaded from the database that does not decode is an error, never served', async () => {
    const store = new GatedStore();
    const cache = new CacheService(store, TTL_MS, settings.cacheTimeoutMs, new QuietLogger('Cache'));
    const broken = new CacheAside<User>(
      new CacheEntries(cache),
      keyOf,
      () => Promise.resolve({ version: 1, deleted: false, json: '{"id":1}' }),
      decodeUser,
    );
    await expect(broken.get(1)).rejects.toThrow(`the projection ${keyOf(1)} loaded from the database does not decode`);
  });
});
