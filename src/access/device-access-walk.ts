/** Counted exactly up to this many users; beyond, the total is an estimate (part 2). */
export const EXACT_UP_TO = 10_000;
/** Candidates read per stream in the first window of a page, and at most in any window. */
const FIRST_BATCH = 64;
const LARGEST_BATCH = 4096;

/** One window of candidates in order (see `DeviceAccessWindowsRepository`). */
export interface Window {
  readonly ids: readonly number[];
  /** The last id the window covers; null when it reached the end. */
  readonly horizon: number | null;
  /** The first candidate it held (allowed or not), or null. */
  readonly first: number | null;
  readonly moment: Date;
}

/** Where the candidates end, and how many users there are at most, for an estimate. */
export interface Extent {
  /** The last candidate of the whole answer in its order (allowed or not), or null. */
  readonly last: number | null;
  /** How many users there are (the table's statistics); null when not known. */
  readonly population: number | null;
}

export interface Walked {
  readonly ids: number[];
  readonly moment: Date;
  /** Undefined when the walk was not asked to count (the total is known) and did not reach the end. */
  readonly total?: { readonly value: number; readonly exact: boolean };
}

/**
 * Walks the windows of the device question from its start until the page is filled and, when
 * counting, until more than `EXACT_UP_TO` users are found or the answer ends. Windows grow as
 * they go (a page deep in the answer, or one whose candidates are mostly refused, needs fewer
 * round trips). Past the cap the total is estimated from how far into the candidates' id range
 * the walk got: the users found, scaled by the part of the range they came from.
 */
export async function walkWindows(
  window: (after: number | null, batch: number) => Promise<Window>,
  extent: () => Promise<Extent>,
  page: { readonly offset: number; readonly limit: number; readonly counting: boolean },
): Promise<Walked> {
  const needed = page.offset + page.limit;
  const found: number[] = [];
  let after: number | null = null;
  let first: number | null = null;
  let batch = Math.min(LARGEST_BATCH, Math.max(FIRST_BATCH, 2 * needed));
  let moment: Date | undefined;
  for (;;) {
    const read = await window(after, batch);
    moment ??= read.moment;
    first ??= read.first;
    found.push(...read.ids);
    // At the end the total is known exactly, asked or not: a page past the end answers it rather
    // than an estimate remembered from another page.
    if (read.horizon === null)
      return { ids: found.slice(page.offset, needed), moment, total: { value: found.length, exact: true } };
    after = read.horizon;
    const pageFilled = found.length >= needed;
    if (pageFilled && (!page.counting || found.length > EXACT_UP_TO)) break;
    batch = Math.min(LARGEST_BATCH, batch * 2);
  }
  const ids = found.slice(page.offset, needed);
  if (!page.counting) return { ids, moment };
  return { ids, moment, total: { value: estimate(found.length, first, after, await extent()), exact: false } };
}

/**
 * The users found up to `reached`, scaled to the whole id range from `first` to the last candidate
 * (either direction), and never more than there are users: a gap in the ids (a sequence moved on,
 * ids of rolled-back inserts) would otherwise inflate it without bound.
 */
function estimate(found: number, first: number | null, reached: number, extent: Extent): number {
  const floor = Math.max(found, EXACT_UP_TO + 1);
  if (first === null || extent.last === null) return floor;
  const covered = Math.abs(reached - first) + 1;
  const whole = Math.abs(extent.last - first) + 1;
  const scaled = Math.round((found * whole) / covered);
  return Math.max(floor, extent.population === null ? scaled : Math.min(scaled, extent.population));
}
