import { ListTotals } from '../../src/platform/projections/list-totals.js';

/** A clock the test moves. */
function clock(start: number): { now: () => number; set: (at: number) => void } {
  let at = start;
  return { now: () => at, set: (next) => (at = next) };
}

describe('ListTotals: a total remembered under the generations it was counted from', () => {
  it('answers the total only under exactly those generations', () => {
    const totals = new ListTotals(clock(0).now);
    totals.remember('users|q', [5, 9], { value: 12, exact: true }, undefined);
    expect(totals.get('users|q', [5, 9])).toEqual({ value: 12, exact: true });
    expect(totals.get('users|q', [6, 9])).toBeUndefined();
    expect(totals.get('users|q', [5])).toBeUndefined();
    expect(totals.get('users|other', [5, 9])).toBeUndefined();
  });

  it('forgets it from the instant the next expiry in the table is reached', () => {
    const time = clock(1_000);
    const totals = new ListTotals(time.now);
    totals.remember('grants|active', [3], { value: 1, exact: true }, 2_000);
    time.set(1_999);
    expect(totals.get('grants|active', [3])).toEqual({ value: 1, exact: true });
    time.set(2_000);
    expect(totals.get('grants|active', [3])).toBeUndefined();
  });

  it('keeps the newest count of a filter', () => {
    const totals = new ListTotals(clock(0).now);
    totals.remember('users|q', [1], { value: 1, exact: true }, undefined);
    totals.remember('users|q', [2], { value: 10_001, exact: false }, undefined);
    expect(totals.get('users|q', [1])).toBeUndefined();
    expect(totals.get('users|q', [2])).toEqual({ value: 10_001, exact: false });
  });
});
