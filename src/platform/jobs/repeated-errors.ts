/**
 * What to do with one occurrence of an error: log it, with how many of its key were held back
 * since the last line logged, or not.
 */
export type Occurrence = { readonly log: true; readonly suppressed: number } | { readonly log: false };

/** A key whose window ended with occurrences held back, to report once. */
export interface Suppressed {
  readonly key: string;
  readonly suppressed: number;
}

/**
 * Collapses a flood of one error into one log line per key per window. During a database
 * outage every job worker fails its poll every few hundred milliseconds, and one line each
 * buries everything else in the log; the first occurrence of a key is logged at once, the
 * others in its window are only counted, and the count goes with the next line logged for that
 * key (or with `ended`, once the flood stops). Pure: the clock is passed in.
 */
export class RepeatedErrors {
  private readonly windows = new Map<string, { readonly until: number; suppressed: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  occurred(key: string): Occurrence {
    const at = this.now();
    const window = this.windows.get(key);
    if (window !== undefined && at < window.until) {
      window.suppressed += 1;
      return { log: false };
    }
    this.windows.set(key, { until: at + this.windowMs, suppressed: 0 });
    return { log: true, suppressed: window?.suppressed ?? 0 };
  }

  /** Windows over with occurrences held back (each reported once), so a flood's tail is not lost. */
  ended(): Suppressed[] {
    const at = this.now();
    const ended: Suppressed[] = [];
    for (const [key, window] of this.windows) {
      if (at < window.until) continue;
      if (window.suppressed > 0) ended.push({ key, suppressed: window.suppressed });
      this.windows.delete(key);
    }
    return ended;
  }
}
