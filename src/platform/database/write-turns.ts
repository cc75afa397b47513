import { ApiError } from '../http/api-error.js';

/** Members a change of a group may name per turn it takes (`turnsFor`). */
export const ITEMS_PER_TURN = 25;

/**
 * The turns a write naming `items` takes: one per `ITEMS_PER_TURN` items, at least one (capped
 * at the instance's limit by `WriteTurns`). A member PATCH of 100 users costs the cores some 30 ms,
 * ten times a user's create: it takes four turns, all of a 2-core instance's (an identity
 * provider's lookups while it pushed groups: p99 6-10 ms, against 8-21 ms at two turns).
 */
export function turnsFor(items: number): number {
  return Math.max(1, Math.ceil(items / ITEMS_PER_TURN));
}

/** One write waiting for its turns: `grant` starts it. */
interface Waiting {
  readonly turns: number;
  readonly grant: () => void;
}

/**
 * Turns for the write transactions of one instance: writes holding at most `limit` turns run at
 * once (most take one; a write naming many items takes more, `turnsFor`), the others wait in
 * arrival order, holding no connection, for at most `waitMs` (then 503). Why: on a machine whose
 * cores the writes already keep busy, a write more in flight adds little throughput and a longer
 * queue for every read behind it (docs/decisions.md, "Writes take turns").
 */
export class WriteTurns {
  private running = 0;
  private readonly waiting: Waiting[] = [];

  constructor(
    readonly limit: number,
    private readonly waitMs: number,
  ) {}

  /** Turns held now, and writes waiting for theirs (for health and tests). */
  get load(): { readonly running: number; readonly waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /**
   * Resolves once this write holds `turns` turns (at most `limit`), with the function that ends
   * them (call it once, when the write and its after-commit work are done); rejects with 503
   * `SERVICE_UNAVAILABLE` (`busy`) when they did not come within `waitMs`. A write never passes
   * one that came before it, so a heavy write is not starved by light ones.
   */
  take(turns = 1): Promise<() => void> {
    const needed = Math.min(Math.max(1, Math.floor(turns)), this.limit);
    if (this.waiting.length === 0 && this.running + needed <= this.limit) {
      this.running += needed;
      return Promise.resolve(this.release(needed));
    }
    return new Promise((resolve, reject) => {
      const entry: Waiting = {
        turns: needed,
        grant: () => {
          clearTimeout(timer);
          resolve(this.release(needed));
        },
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(entry);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        reject(ApiError.unavailable('busy'));
        // It may have kept lighter writes behind it waiting.
        this.admit();
      }, this.waitMs);
      this.waiting.push(entry);
    });
  }

  /** Ends turns once, then starts the writes at the head of the queue that now fit. */
  private release(turns: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= turns;
      this.admit();
    };
  }

  private admit(): void {
    for (let next = this.waiting[0]; next !== undefined; next = this.waiting[0]) {
      if (this.running + next.turns > this.limit) return;
      this.waiting.shift();
      this.running += next.turns;
      next.grant();
    }
  }
}
