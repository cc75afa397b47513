import { Recent } from '../cache/recent.js';

/** A list's total as counted: the number, and whether it is exact (part 2). */
export interface ListTotal {
  readonly value: number;
  readonly exact: boolean;
}

interface Counted extends ListTotal {
  readonly generations: string;
  /** Epoch ms at which the clock alone may change what matches (an expiry), or null. */
  readonly until: number | null;
}

/** Totals kept per instance; the oldest goes first past this many. */
const TOTALS_MAX = 2000;

/**
 * The totals of list filters, remembered per instance under the generations of the tables they
 * were counted from. A page is read from the database, but its filter's total is not counted
 * again while those generations are current and no expiry has passed: the rows that match are
 * then the same. Counting is what a large list pays most for (the capped count reads 10 001
 * rows), and every page of one filter, in any order, shares its total.
 *
 * Like a cached page, a total is remembered only under generations read before the count ran: a
 * write bumps them after its commit and before its response, so a read that starts after that
 * response never takes a total counted before the write. The generations end with the flush
 * generation: a flush of the whole cache (a write whose bump was lost, the cache epoch, the CLI's
 * writes) moves no table generation, and must forget these totals as it drops the cached pages.
 */
export class ListTotals {
  private readonly known = new Recent<string, Counted>(TOTALS_MAX);

  /** `now`: the clock expiries are judged by (a test moves its own). */
  constructor(private readonly now: () => number = Date.now) {}

  get(key: string, generations: readonly number[]): ListTotal | undefined {
    const counted = this.known.get(key);
    if (counted === undefined || counted.generations !== generations.join('.')) return undefined;
    if (counted.until !== null && this.now() >= counted.until) return undefined;
    return { value: counted.value, exact: counted.exact };
  }

  remember(key: string, generations: readonly number[], total: ListTotal, until: number | undefined): void {
    this.known.set(key, { ...total, generations: generations.join('.'), until: until ?? null });
  }
}
