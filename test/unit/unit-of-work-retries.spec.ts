import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { QueryFailedError, type DataSource, type EntityManager } from 'typeorm';
import type { CacheEntry, CacheStore, WindowCount } from '../../src/platform/cache/cache-store.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';
import { MemoryCacheStore } from '../../src/platform/cache/memory-cache-store.js';
import { loadSettings } from '../../src/platform/config/settings.js';
import type { CacheEpoch } from '../../src/platform/cache/cache-epoch.js';
import { ApiError } from '../../src/platform/http/api-error.js';
import { wholeCache } from '../support/whole-cache.js';

/*
 * UnitOfWork.run against a scripted database: each transaction attempt fails (in a statement or at
 * COMMIT) or commits as the test says. The backoff between attempts is node:timers/promises'
 * setTimeout, replaced here by one that records the delay and resolves at once, with Math.random
 * pinned, so the retries are deterministic and take no time.
 */

const sleeps: number[] = [];
jest.unstable_mockModule('node:timers/promises', () => ({
  setTimeout: (ms: number): Promise<void> => {
    sleeps.push(ms);
    return Promise.resolve();
  },
}));
// Imported after the mock is registered, so the unit of work sleeps through it.
const { UnitOfWork } = await import('../../src/platform/database/unit-of-work.js');
const { CacheCommits } = await import('../../src/platform/cache/cache-commits.js');

const settings = loadSettings({});

/** A driver error as `pg` raises it, wrapped by TypeORM as it reaches the service. */
const sqlState = (code: string): QueryFailedError =>
  new QueryFailedError('UPDATE users SET name = $1', [], Object.assign(new Error(`sqlstate ${code}`), { code }));

const deadlock = (): QueryFailedError => sqlState('40P01');
const serializationFailure = (): QueryFailedError => sqlState('40001');

type Failure = { readonly at: 'statement' | 'commit'; readonly error: Error } | undefined;

/**
 * The part of TypeORM's DataSource the unit of work uses: `transaction(cb)`. Attempt n fails as
 * `script[n - 1]` says (nothing: it commits). Every statement, COMMIT and ROLLBACK goes to `log`,
 * which the after-commit tasks of the tests write to as well: the order of events is the assertion.
 */
class ScriptedDatabase {
  attempts = 0;

  constructor(
    private readonly log: string[],
    private readonly script: readonly Failure[] = [],
  ) {}

  async transaction<T>(work: (db: EntityManager) => Promise<T>): Promise<T> {
    this.attempts += 1;
    const attempt = this.attempts;
    const failure = this.script[attempt - 1];
    const query = (text: string): Promise<unknown[]> => {
      this.log.push(`${attempt}: ${text}`);
      return failure?.at === 'statement' ? Promise.reject(failure.error) : Promise.resolve([]);
    };
    // Only `query` is reached through the EntityManager in these tests.
    const db = { query } as unknown as EntityManager;
    try {
      const value = await work(db);
      if (failure?.at === 'commit') throw failure.error;
      this.log.push(`${attempt}: COMMIT`);
      return value;
    } catch (error) {
      this.log.push(`${attempt}: ROLLBACK`);
      throw error;
    }
  }
}

/** A shared cache that refuses every call (Redis unreachable from this instance). */
class UnreachableStore implements CacheStore {
  readonly kind = 'redis' as const;
  get(): Promise<CacheEntry | undefined> {
    return refused();
  }
  getMany(): Promise<(CacheEntry | undefined)[]> {
    return refused();
  }
  setIfNotOlder(): Promise<boolean> {
    return refused();
  }
  setManyIfNotOlder(): Promise<void> {
    return refused();
  }
  deleteIfSame(): Promise<boolean> {
    return refused();
  }
  tombstoneByPrefix(): Promise<number> {
    return refused();
  }
  flushAll(): Promise<void> {
    return refused();
  }
  increment(): Promise<WindowCount> {
    return refused();
  }
  bumpGenerations(): Promise<void> {
    return refused();
  }
  generations(): Promise<number[]> {
    return refused();
  }
  getWithGenerations(): Promise<{ entry: CacheEntry | undefined; generations: number[] }> {
    return refused();
  }
  ping(): Promise<void> {
    return refused();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function refused<T>(): Promise<T> {
  return Promise.reject(new Error('ECONNREFUSED'));
}

const warnings: unknown[] = [];
const errors: unknown[] = [];

function setup(
  script: readonly Failure[] = [],
  store: CacheStore = new MemoryCacheStore(),
  afterCommitTimeoutMs = 60_000,
) {
  const log: string[] = [];
  const database = new ScriptedDatabase(log, script);
  const cache = wholeCache(new CacheService(store, settings.cacheTtlSeconds * 1000, settings.cacheTimeoutMs));
  const epoch = {
    bumps: 0,
    bump(): Promise<void> {
      this.bumps += 1;
      return Promise.resolve();
    },
  };
  // The fake implements the one DataSource method a write reaches (transaction).
  const unitOfWork = new UnitOfWork(database as unknown as DataSource);
  // The cache follows its commits, as CacheModule wires it at start.
  new CacheCommits(
    unitOfWork,
    cache.envelope,
    cache.generations,
    // Only bump() is called; the real one needs a DataSource and Settings.
    epoch as unknown as CacheEpoch,
    { afterCommitTimeoutMs },
  ).onModuleInit();
  return { log, database, cache, epoch, unitOfWork };
}

/** A write that updates a row and leaves two after-commit tasks, all logged with the attempt that ran it. */
function renameUser(log: string[]) {
  let runs = 0;
  return async (tx: { db: EntityManager; afterCommit(task: () => Promise<void>): void }): Promise<string> => {
    runs += 1;
    const run = runs;
    tx.afterCommit(() => {
      log.push(`after-commit A of run ${run}`);
      return Promise.resolve();
    });
    await tx.db.query('UPDATE users SET name = $1', ['renamed']);
    tx.afterCommit(() => {
      log.push(`after-commit B of run ${run}`);
      return Promise.resolve();
    });
    return `result of run ${run}`;
  };
}

beforeEach(() => {
  sleeps.length = 0;
  warnings.length = 0;
  errors.length = 0;
  // Jitter at its midpoint: each backoff is exactly 15 ms times the attempt.
  jest.spyOn(Math, 'random').mockReturnValue(0.5);
  Logger.overrideLogger({
    log: () => undefined,
    warn: (message: unknown) => warnings.push(message),
    error: (message: unknown) => errors.push(message),
  });
});

afterEach(() => {
  jest.restoreAllMocks();
});

describe('UnitOfWork.run retries deadlocks and serialization failures', () => {
  it.each([
    ['a deadlock (40P01)', deadlock],
    ['a serialization failure (40001)', serializationFailure],
  ])(
    'retries %s and commits on a later attempt; after-commit work runs once, after that commit',
    async (_, conflict) => {
      const { log, database, unitOfWork } = setup([
        { at: 'statement', error: conflict() },
        { at: 'statement', error: conflict() },
      ]);

      expect(await unitOfWork.run(renameUser(log))).toBe('result of run 3');
      expect(log).toEqual([
        '1: UPDATE users SET name = $1',
        '1: ROLLBACK',
        '2: UPDATE users SET name = $1',
        '2: ROLLBACK',
        '3: UPDATE users SET name = $1',
        '3: COMMIT',
        'after-commit A of run 3',
        'after-commit B of run 3',
      ]);
      expect(database.attempts).toBe(3);
      expect(unitOfWork.conflicts).toBe(2);
      expect(sleeps).toEqual([15, 30]);
    },
  );

  it('a conflict raised at COMMIT is retried too, and the failed attempt’s after-commit work never runs', async () => {
    const { log, unitOfWork } = setup([{ at: 'commit', error: serializationFailure() }]);

    expect(await unitOfWork.run(renameUser(log))).toBe('result of run 2');
    expect(log).toEqual([
      '1: UPDATE users SET name = $1',
      '1: ROLLBACK',
      '2: UPDATE users SET name = $1',
      '2: COMMIT',
      'after-commit A of run 2',
      'after-commit B of run 2',
    ]);
    expect(sleeps).toEqual([15]);
  });

  it('a conflict through all 5 attempts is 503 SERVICE_UNAVAILABLE (contention); nothing after-commit runs', async () => {
    // A sixth attempt would commit: the limit, not the script, ends the retries.
    const { log, database, unitOfWork } = setup(
      Array.from({ length: 5 }, (_, index) => ({
        at: 'statement' as const,
        error: index % 2 === 0 ? deadlock() : serializationFailure(),
      })),
    );

    const outcome = unitOfWork.run(renameUser(log));
    await expect(outcome).rejects.toBeInstanceOf(ApiError);
    await expect(outcome).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      status: 503,
      details: { dependency: 'database', reason: 'contention' },
      headers: { 'Retry-After': '1' },
    });
    expect(database.attempts).toBe(5);
    expect(log.filter((line) => line.endsWith('ROLLBACK'))).toHaveLength(5);
    expect(log.filter((line) => line.startsWith('after-commit'))).toEqual([]);
    expect(unitOfWork.conflicts).toBe(5);
    // A backoff between attempts, none after the last; each longer than the one before.
    expect(sleeps).toEqual([15, 30, 45, 60]);
    expect(warnings).toEqual([{ msg: 'write conflict persisted through the retries', attempts: 5 }]);
  });

  it.each([
    [0, [8, 15, 23, 30]],
    [0.999, [22, 45, 67, 90]],
  ])(
    'the backoff is jittered between half and one and a half times 15 ms × attempt (random %p)',
    async (random, expected) => {
      jest.spyOn(Math, 'random').mockReturnValue(random);
      const { log, unitOfWork } = setup(
        Array.from({ length: 5 }, () => ({ at: 'statement' as const, error: deadlock() })),
      );
      await expect(unitOfWork.run(renameUser(log))).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      expect(sleeps).toEqual(expected);
    },
  );

  it.each([
    ['a unique violation (23505)', (): Error => sqlState('23505')],
    ['a lost connection (08006)', (): Error => sqlState('08006')],
    ['a lock timeout (55P03)', (): Error => sqlState('55P03')],
    ['an error without a SQLSTATE', (): Error => new Error('a bug')],
  ])('%s is thrown at once, unchanged, and not retried', async (_, failure) => {
    const error = failure();
    const { log, database, unitOfWork } = setup([{ at: 'statement', error }]);

    await expect(unitOfWork.run(renameUser(log))).rejects.toBe(error);
    expect(database.attempts).toBe(1);
    expect(log).toEqual(['1: UPDATE users SET name = $1', '1: ROLLBACK']);
    expect(unitOfWork.conflicts).toBe(0);
    expect(sleeps).toEqual([]);
  });

  it('an error the work itself throws (a 412) is thrown at once, and its after-commit work never runs', async () => {
    const { log, database, unitOfWork } = setup();
    const stale = ApiError.preconditionFailed(7);
    const outcome = unitOfWork.run((tx) => {
      tx.afterCommit(() => {
        log.push('after-commit');
        return Promise.resolve();
      });
      return Promise.reject(stale);
    });
    await expect(outcome).rejects.toBe(stale);
    expect(database.attempts).toBe(1);
    expect(log).toEqual(['1: ROLLBACK']);
  });
});

describe('UnitOfWork after-commit work: the committed write stands', () => {
  it('a failing task (even one that looks like a conflict) never re-runs the committed write; the cache is dropped', async () => {
    const { log, database, cache, epoch, unitOfWork } = setup();
    await cache.put('res:user:1', { version: 1, deleted: false, json: '{"id":1}' }, false);

    const result = await unitOfWork.run(async (tx) => {
      await tx.db.query('UPDATE users SET name = $1', ['renamed']);
      tx.afterCommit(() => Promise.reject(deadlock()));
      tx.afterCommit(() => {
        log.push('after-commit B');
        return Promise.resolve();
      });
      return 'committed';
    });

    expect(result).toBe('committed');
    expect(database.attempts).toBe(1);
    expect(log).toEqual(['1: UPDATE users SET name = $1', '1: COMMIT', 'after-commit B']);
    expect(unitOfWork.conflicts).toBe(0);
    expect(sleeps).toEqual([]);
    expect(cache.stats.after_commit_failures).toBe(1);
    expect(errors).toHaveLength(1);
    // Which entries went stale is unknown, so every entry is dropped; the cache was reachable.
    expect((await cache.get('res:user:1')).entry).toBeUndefined();
    expect(epoch.bumps).toBe(0);
  });

  it('a rebuild that did not reach the cache counts as a failure; with the cache unreachable, the epoch is bumped', async () => {
    const { cache, epoch, unitOfWork } = setup([], new UnreachableStore());

    const result = await unitOfWork.run(async (tx) => {
      await tx.db.query('UPDATE users SET name = $1', ['renamed']);
      tx.afterCommit(async () => {
        // The cache service never throws: a lost rebuild shows only in its counters.
        await cache.put('res:user:1', { version: 2, deleted: false, json: '{"id":1}' }, true);
      });
      return 'committed';
    });

    expect(result).toBe('committed');
    expect(cache.stats.lost_writes).toBe(2); // the rebuild, then the flush that tried to drop everything
    expect(cache.stats.after_commit_failures).toBe(1);
    expect(epoch.bumps).toBe(1);
  });

  it('after-commit work held up past its budget (a locked table’s re-read): the write answers, the cache is dropped, the work finishes later', async () => {
    const { log, cache, epoch, unitOfWork } = setup([], new MemoryCacheStore(), 20);
    await cache.put('res:user:2', { version: 1, deleted: false, json: '{"id":2}' }, false);
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));

    // The budget's clock is a fake one: the write answers when the test moves it, not after a wait.
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    const running = unitOfWork.run(async (tx) => {
      await tx.db.query('UPDATE users SET name = $1', ['renamed']);
      tx.afterCommit(async () => {
        await held; // released only after the write has answered
        log.push('rebuilt late');
      });
      return 'committed';
    });
    await jest.advanceTimersByTimeAsync(1_000);
    const result = await running;
    jest.useRealTimers();

    expect(result).toBe('committed');
    expect(log).toEqual(['1: UPDATE users SET name = $1', '1: COMMIT']);
    expect(cache.stats.after_commit_failures).toBe(1);
    // Nothing that may be stale is served: every entry was dropped before the write answered.
    expect((await cache.get('res:user:2')).entry).toBeUndefined();
    expect(epoch.bumps).toBe(0);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toContain('rebuilt late');
  });

  it('a write whose after-commit work all landed leaves the cache alone', async () => {
    const { cache, epoch, unitOfWork } = setup();
    await cache.put('res:user:2', { version: 1, deleted: false, json: '{"id":2}' }, false);
    await unitOfWork.run(async (tx) => {
      await tx.db.query('UPDATE users SET name = $1', ['renamed']);
      tx.afterCommit(async () => {
        await cache.put('res:user:1', { version: 2, deleted: false, json: '{"id":1}' }, true);
      });
    });
    expect(cache.stats.after_commit_failures).toBe(0);
    expect((await cache.get('res:user:2')).entry).toMatchObject({ version: 1 });
    expect(epoch.bumps).toBe(0);
  });
});
