import { jest } from '@jest/globals';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiError } from '../../src/platform/http/api-error.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { turnsFor, WriteTurns } from '../../src/platform/database/write-turns.js';

/*
 * Turns for write transactions (DB_WRITE_CONCURRENCY): at most `limit` at once, the rest in
 * arrival order, 503 `busy` for a write whose turn did not come in time. Gates are promises the
 * test opens; "not yet" is checked after the event loop has run everything it could.
 */

/** Lets every callback already due run (promise jobs and I/O-free timers of this turn). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A promise and the function that resolves it. */
function gate(): { open: () => void; opened: Promise<void> } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('WriteTurns', () => {
  afterEach(() => jest.useRealTimers());

  it('runs `limit` writes at once; the next starts when one ends, in arrival order', async () => {
    const turns = new WriteTurns(2, 60_000);
    const started: string[] = [];
    const take = (name: string) =>
      turns.take().then((end) => {
        started.push(name);
        return end;
      });
    const [endA, endB] = await Promise.all([take('a'), take('b')]);
    const c = take('c');
    const d = take('d');
    await settle();
    expect(started).toEqual(['a', 'b']);
    expect(turns.load).toEqual({ running: 2, waiting: 2 });
    endB();
    const endC = await c;
    await settle();
    expect(started).toEqual(['a', 'b', 'c']);
    // Ending a turn twice frees it once: d still waits.
    endB();
    await settle();
    expect(started).toEqual(['a', 'b', 'c']);
    endA();
    (await d)();
    endC();
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a write whose turn does not come in time is 503 SERVICE_UNAVAILABLE busy; the turn then goes to the next', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    const turns = new WriteTurns(1, 2000);
    const endFirst = await turns.take();
    const late = turns.take();
    const refusal = late.then(
      () => undefined,
      (error: unknown) => error,
    );
    jest.advanceTimersByTime(1999);
    await settle();
    expect(turns.load).toEqual({ running: 1, waiting: 1 });
    const next = turns.take();
    jest.advanceTimersByTime(1);
    const error = await refusal;
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      status: 503,
      details: { dependency: 'database', reason: 'busy' },
    });
    expect(turns.load).toEqual({ running: 1, waiting: 1 });
    // The expired write is skipped: the first one's end hands its turn to the one behind it.
    endFirst();
    const endNext = await next;
    expect(turns.load).toEqual({ running: 1, waiting: 0 });
    endNext();
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });
});

describe('turns by weight', () => {
  afterEach(() => jest.useRealTimers());

  it('a write naming many items takes one turn per 25 of them', () => {
    expect([0, 1, 25, 26, 50, 100, 1000].map(turnsFor)).toEqual([1, 1, 1, 2, 2, 4, 40]);
  });

  it('a heavy write waits until its turns are free, capped at the limit; lighter writes behind it wait too', async () => {
    const turns = new WriteTurns(4, 60_000);
    const started: string[] = [];
    const take = (name: string, weight: number) =>
      turns.take(weight).then((end) => {
        started.push(name);
        return end;
      });
    const endLight = await take('light', 1);
    const heavy = take('heavy', 40);
    const behind = take('behind', 1);
    await settle();
    // Three turns are free, but the heavy write (capped at 4) came first and nothing passes it.
    expect(started).toEqual(['light']);
    expect(turns.load).toEqual({ running: 1, waiting: 2 });
    endLight();
    const endHeavy = await heavy;
    await settle();
    expect(started).toEqual(['light', 'heavy']);
    expect(turns.load).toEqual({ running: 4, waiting: 1 });
    endHeavy();
    (await behind)();
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a heavy write that gives up lets the lighter writes behind it start', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    const turns = new WriteTurns(2, 1000);
    const endFirst = await turns.take(1);
    const heavy = turns.take(2).then(
      () => 'started',
      (error: unknown) => (error instanceof ApiError ? error.code : 'other'),
    );
    jest.advanceTimersByTime(500);
    let light = false;
    const lighter = turns.take(1).then((end) => {
      light = true;
      return end;
    });
    await settle();
    expect(light).toBe(false);
    jest.advanceTimersByTime(500);
    expect(await heavy).toBe('SERVICE_UNAVAILABLE');
    (await lighter)();
    expect(light).toBe(true);
    endFirst();
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });
});

describe('UnitOfWork with turns', () => {
  /** The one DataSource method a write reaches: `transaction(cb)`, on a manager that answers nothing. */
  const database = {
    transaction: <T>(work: (db: EntityManager) => Promise<T>): Promise<T> =>
      work({ query: () => Promise.resolve([]) } as unknown as EntityManager),
  } as unknown as DataSource;

  it('a second write waits for the first, its after-commit work included', async () => {
    const turns = new WriteTurns(1, 60_000);
    const uow = new UnitOfWork(database, turns);
    const log: string[] = [];
    const afterCommit = gate();
    const first = uow.run((tx) => {
      log.push('first');
      tx.afterCommit(async () => {
        await afterCommit.opened;
        log.push('first after commit');
      });
      return Promise.resolve();
    });
    const second = uow.run(() => {
      log.push('second');
      return Promise.resolve();
    });
    await settle();
    expect(log).toEqual(['first']);
    afterCommit.open();
    await Promise.all([first, second]);
    expect(log).toEqual(['first', 'first after commit', 'second']);
  });

  it('a write run inside a write shares its turn (a limit of one does not deadlock it)', async () => {
    const uow = new UnitOfWork(database, new WriteTurns(1, 60_000));
    const answer = await uow.run(() => uow.run(() => Promise.resolve('inner')));
    expect(answer).toBe('inner');
  });

  it('a write that fails ends its turn', async () => {
    const turns = new WriteTurns(1, 60_000);
    const uow = new UnitOfWork(database, turns);
    await expect(uow.run(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
    await expect(uow.run(() => Promise.resolve('next'))).resolves.toBe('next');
  });
});
