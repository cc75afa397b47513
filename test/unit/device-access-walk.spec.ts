import { EXACT_UP_TO, walkWindows, type Extent, type Window } from '../../src/access/device-access-walk.js';

/*
 * The walk over the device question's windows, against an answer held in memory: a window of
 * `batch` covers the next `batch` candidates after `after` (every other one allowed), as the
 * repository's windows do when one stream holds them all.
 */

const MOMENT = new Date('2026-11-28T00:00:00.000Z');

function answer(candidates: readonly number[], allowed: (id: number) => boolean, population: number | null = null) {
  const calls: { after: number | null; batch: number }[] = [];
  const window = (after: number | null, batch: number): Promise<Window> => {
    calls.push({ after, batch });
    const rest = candidates.filter((id) => after === null || id > after);
    const taken = rest.slice(0, batch);
    const horizon = rest.length > batch ? (taken.at(-1) ?? null) : null;
    return Promise.resolve({ ids: taken.filter(allowed), horizon, first: taken[0] ?? null, moment: MOMENT });
  };
  const lastCandidate = (): Promise<Extent> => Promise.resolve({ last: candidates.at(-1) ?? null, population });
  return { window, lastCandidate, calls };
}

const range = (from: number, count: number): number[] => Array.from({ length: count }, (_, i) => from + i);
const even = (id: number): boolean => id % 2 === 0;

describe('walking the device question in windows', () => {
  it('fills a page from one window when it can, and counts exactly when the answer ends', async () => {
    const { window, lastCandidate, calls } = answer(range(1, 50), even);
    const walked = await walkWindows(window, lastCandidate, { offset: 0, limit: 10, counting: true });
    expect(walked.ids).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18, 20]);
    expect(walked.total).toEqual({ value: 25, exact: true });
    expect(calls).toHaveLength(1);
  });

  it('goes on past a window until the page is filled, each window after the last one’s horizon', async () => {
    const { window, lastCandidate, calls } = answer(range(1, 1000), (id) => id % 10 === 0);
    const walked = await walkWindows(window, lastCandidate, { offset: 20, limit: 10, counting: false });
    expect(walked.ids).toEqual(range(21, 10).map((n) => n * 10));
    expect(walked.total).toBeUndefined();
    // Each window begins after the previous one's last candidate, and they grow.
    for (let i = 1; i < calls.length; i += 1) {
      expect(calls[i]?.after).toBe((calls[i - 1]?.after ?? 0) + (calls[i - 1]?.batch ?? 0));
      expect(calls[i]?.batch).toBeGreaterThanOrEqual(calls[i - 1]?.batch ?? 0);
    }
  });

  it('counts exactly up to the cap, and past it estimates from the share of the id range walked', async () => {
    const { window, lastCandidate } = answer(range(1, 40_000), even);
    const walked = await walkWindows(window, lastCandidate, { offset: 0, limit: 25, counting: true });
    expect(walked.ids).toEqual(range(1, 25).map((n) => n * 2));
    expect(walked.total?.exact).toBe(false);
    const value = walked.total?.value ?? 0;
    expect(value).toBeGreaterThan(EXACT_UP_TO);
    // 20 000 are allowed: the estimate is within a few per cent of it.
    expect(Math.abs(value - 20_000)).toBeLessThan(1000);
  });

  it('counts exactly an answer of exactly the cap, and one just past it is an estimate', async () => {
    const exactly = answer(range(1, EXACT_UP_TO), () => true);
    expect(
      (await walkWindows(exactly.window, exactly.lastCandidate, { offset: 0, limit: 25, counting: true })).total,
    ).toEqual({
      value: EXACT_UP_TO,
      exact: true,
    });
    const past = answer(range(1, EXACT_UP_TO + 5000), () => true);
    const walked = await walkWindows(past.window, past.lastCandidate, { offset: 0, limit: 25, counting: true });
    expect(walked.total?.exact).toBe(false);
    expect(walked.total?.value).toBeGreaterThan(EXACT_UP_TO);
  });

  it('answers an empty page past the end, with the exact total, even when not asked to count (a remembered estimate is not the truth)', async () => {
    for (const counting of [true, false]) {
      const { window, lastCandidate } = answer(range(1, 30), () => true);
      const walked = await walkWindows(window, lastCandidate, { offset: 100, limit: 25, counting });
      expect(walked.ids).toEqual([]);
      expect(walked.total).toEqual({ value: 30, exact: true });
    }
  });

  it('never estimates more users than there are: a gap in the ids does not inflate it (found by a review: 5 000 001 for 14 002)', async () => {
    const candidates = [...range(1, 14_001), 5_000_001];
    const capped = answer(candidates, () => true, 14_002);
    const walked = await walkWindows(capped.window, capped.lastCandidate, { offset: 0, limit: 25, counting: true });
    expect(walked.total).toEqual({ value: 14_002, exact: false });
    // Without the table's statistics, the share of the id range is all there is.
    const unknown = answer(candidates, () => true, null);
    const scaled = await walkWindows(unknown.window, unknown.lastCandidate, { offset: 0, limit: 25, counting: true });
    expect(scaled.total?.value).toBeGreaterThan(1_000_000);
    // The cap never goes below what was found.
    const stale = answer(range(1, 20_000), () => true, 100);
    const found = await walkWindows(stale.window, stale.lastCandidate, { offset: 0, limit: 25, counting: true });
    expect(found.total?.value).toBeGreaterThan(EXACT_UP_TO);
  });
});
