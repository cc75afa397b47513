import { ApiError } from '../http/api-error.js';

/** One write waiting for its turn: `grant` starts it; `expired` once it gave up. */
interface Waiting {
  readonly grant: () => void;
  expired: boolean;
}

/**
 * Turns for the write transactions of one instance: at most `limit` run at once, the others wait
 * in arrival order, holding no connection, for at most `waitMs` (then 503). Why: on a machine
 * whose cores the writes already keep busy, a write more in flight adds no throughput, only a
 * longer queue for every read behind it (measured on 2 cores, an identity provider's first sync:
 * its lookups' p99 fell from 14.6 to 5.5 ms, and from 48 to 8-16 ms while groups got their
 * members, with 2 writes at a time instead of 10; docs/decisions.md, "Writes take turns").
 */
export class WriteTurns {
  private running = 0;
  private readonly waiting: Waiting[] = [];

  constructor(
    readonly limit: number,
    private readonly waitMs: number,
  ) {}

  /** Writes running now and waiting for their turn (for health and tests). */
  get load(): { readonly running: number; readonly waiting: number } {
    return { running: this.running, waiting: this.waiting.filter((entry) => !entry.expired).length };
  }

  /**
   * Resolves once it is this write's turn, with the function that ends it (call it once, when the
   * write and its after-commit work are done); rejects with 503 `SERVICE_UNAVAILABLE` (`busy`)
   * when the turn did not come within `waitMs`.
   */
  take(): Promise<() => void> {
    if (this.running < this.limit) {
      this.running += 1;
      return Promise.resolve(this.release());
    }
    return new Promise((resolve, reject) => {
      const entry: Waiting = {
        expired: false,
        grant: () => {
          clearTimeout(timer);
          resolve(this.release());
        },
      };
      const timer = setTimeout(() => {
        entry.expired = true;
        reject(ApiError.unavailable('busy'));
      }, this.waitMs);
      this.waiting.push(entry);
    });
  }

  /** Ends a turn once: hands it to the first write still waiting, or frees it. */
  private release(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (let next = this.waiting.shift(); next !== undefined; next = this.waiting.shift())
        if (!next.expired) return next.grant();
      this.running -= 1;
    };
  }
}
