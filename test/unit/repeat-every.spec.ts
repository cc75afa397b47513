import { jest } from '@jest/globals';
import { repeatEvery } from '../../src/platform/jobs/every.js';

/** A promise the test settles itself. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Lets queued promise callbacks run. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
};

describe('repeatEvery: timed work, one run at a time', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('a slow run delays the next rather than overlapping it; stop waits for the run under way', async () => {
    const first = gate();
    let started = 0;
    let running = 0;
    let most = 0;
    const repeating = repeatEvery(
      1000,
      async () => {
        started += 1;
        running += 1;
        most = Math.max(most, running);
        if (started === 1) await first.promise;
        running -= 1;
      },
      () => undefined,
    );
    jest.advanceTimersByTime(1000);
    await settle();
    expect(started).toBe(1);
    // Two more ticks while the first run hangs: they wait behind it.
    jest.advanceTimersByTime(2000);
    await settle();
    expect(started).toBe(1);
    let stopped = false;
    const stopping = repeating.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    first.open();
    await stopping;
    // The runs the ticks asked for ran after it, one at a time; none overlapped.
    expect(started).toBe(3);
    expect(most).toBe(1);
    // Stopped: no tick runs the work again.
    jest.advanceTimersByTime(10_000);
    await settle();
    expect(started).toBe(3);
  });

  it('a failed run is handed to the handler and the next tick runs again', async () => {
    const failures: unknown[] = [];
    let runs = 0;
    const repeating = repeatEvery(
      500,
      () => {
        runs += 1;
        return runs === 1 ? Promise.reject(new Error('down')) : Promise.resolve();
      },
      (error) => failures.push(error),
    );
    jest.advanceTimersByTime(500);
    await settle();
    expect(failures).toHaveLength(1);
    jest.advanceTimersByTime(500);
    await settle();
    expect(runs).toBe(2);
    expect(failures).toHaveLength(1);
    await repeating.stop();
  });
});
