import { Logger } from '@nestjs/common';
import { currentRequest } from '../http/request-context.js';
import type { CacheStore } from './cache-store.js';

export type CacheState = 'up' | 'down' | 'memory';

/** Counters exposed on /health/ready and in logs. */
export interface CacheStats {
  hits: number;
  misses: number;
  failures: number;
  timeouts: number;
  short_circuited: number;
  /** Database loads made to fill the cache (single-flight: concurrent misses of a key count once). */
  loads: number;
  /** Writes whose work after the commit failed (each dropped the cache). */
  after_commit_failures: number;
  /** Cache writes after a commit that did not reach the store (timeouts, errors, an open circuit). */
  lost_writes: number;
  /** Entries that could not be read back (bad format, truncated, wrong shape): served as misses and replaced. */
  unreadable: number;
  /** Calls not waited for because their request had spent its budget (part 7: one per request). */
  over_budget: number;
}

const FAILURES_TO_OPEN = 3;
const OPEN_FOR_MS = 1000;

class CacheTimeout extends Error {
  constructor(ms: number) {
    super(`cache call exceeded its ${ms} ms budget`);
  }
}

/**
 * The cache's safety envelope: every store call is bounded by the budget
 * (CACHE_TIMEOUT_MS, 50 ms), guarded by a circuit breaker, logged and counted on failure, and
 * never throws. A failed write-path call, a call the store refused and an opening circuit mark
 * the cache dirty: before reads trust it again the whole cache is dropped (generation bump), so
 * an invalidation lost in an outage, here or on another instance, can never let a stale entry be
 * served after Redis returns. What the calls mean lives with their users: entries (CacheEntries),
 * table generations (TableGenerations), rate-limit windows (WindowCounters in auth).
 */
export class CacheService {
  readonly stats: CacheStats = {
    hits: 0,
    misses: 0,
    failures: 0,
    timeouts: 0,
    short_circuited: 0,
    loads: 0,
    after_commit_failures: 0,
    lost_writes: 0,
    unreadable: 0,
    over_budget: 0,
  };
  private consecutiveFailures = 0;
  private openUntil = 0;
  /** Events after which an invalidation may have been lost, and how many of them a flush covered. */
  private failureMarks = 0;
  private flushedMarks = 0;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly store: CacheStore,
    readonly ttlMs: number,
    private readonly budgetMs: number,
    private readonly logger: Logger = new Logger('Cache'),
  ) {}

  get kind(): 'redis' | 'memory' {
    return this.store.kind;
  }

  /**
   * Runs one store call inside the envelope: `ok: false` when the cache could not be asked (the
   * caller then reads the database). `afterWrite`: the call rebuilds or invalidates after a commit
   * (sent even with the circuit open, without waiting; one that fails or is not waited for is a
   * lost write, which drops the cache). `budgetMs`: a budget of its own, outside the request's.
   * `lookup`: a read of entries, which shares its request's budget with the request's other lookups.
   */
  async call<T>(
    operation: string,
    key: string,
    call: (store: CacheStore) => Promise<T>,
    options: { readonly afterWrite?: boolean; readonly budgetMs?: number; readonly lookup?: boolean } = {},
  ): Promise<{ ok: true; value: T } | { ok: false }> {
    return this.guard(
      operation,
      key,
      options.afterWrite ?? false,
      () => call(this.store),
      options.budgetMs,
      options.lookup ?? false,
    );
  }

  /**
   * Drops every entry at once (a generation bump on Redis), for writers outside the server's
   * write path such as the CLI; returns false if the cache could not be reached.
   */
  async invalidateAll(): Promise<boolean> {
    const marks = this.failureMarks;
    const result = await this.guard('flush', '*', true, () => this.store.flushAll());
    // A flush covers every mark made before it began: no second flush for the same outage.
    if (result.ok) this.flushedMarks = Math.max(this.flushedMarks, marks);
    return result.ok;
  }

  /** Checks the store within the budget (readiness probe). */
  async probe(): Promise<CacheState> {
    if (this.store.kind === 'memory') return 'memory';
    const result = await this.guard('ping', '-', false, () => this.store.ping());
    return result.ok ? 'up' : 'down';
  }

  async close(): Promise<void> {
    await this.store.close().catch(() => undefined);
  }

  private async guard<T>(
    operation: string,
    key: string,
    afterWrite: boolean,
    call: () => Promise<T>,
    budgetMs?: number,
    lookup = false,
  ): Promise<{ ok: true; value: T } | { ok: false }> {
    if (this.store.kind === 'memory') return { ok: true, value: await call() };
    // All of one HTTP request's lookups share the budget (part 7); a job's long call, or one with
    // a budget of its own, does not. A fill after a miss (the store just answered) and a rate-limit
    // count have the budget per call: cut by what the lookups spent on a loaded machine, a fill
    // was lost and the next read missed again. A write's work after its commit is not cut by what its reads
    // spent, nor by a call that ran out of time: not waited for, an invalidation may reach Redis
    // after another instance read the entry it replaces (a Redis slower than the budget, or one
    // that wakes from a pause and serves another connection first). It has the budget per call
    // while the circuit is closed, and costs nothing once it is open (part 7).
    const work = budgetMs === undefined ? currentRequest()?.cache : undefined;
    const budget = budgetMs ?? this.budgetMs;
    const shared = work !== undefined && lookup;
    const left = shared ? Math.min(budget, this.budgetMs - work.spentMs) : budget;
    const open = Date.now() < this.openUntil;
    if (afterWrite && open) return this.sendWithoutWaiting(call);
    if (open) return this.skipped('short_circuited');
    // While the store may hold entries whose invalidation was lost, reads bypass it (from the
    // database, without filling) and one flush per instance drops it. A write's work goes on: it
    // lands in a shard already flushed, ahead of any fill, or in one about to be.
    if (!afterWrite && this.dirty) {
      this.flushOnce();
      return this.skipped('short_circuited');
    }
    if (left <= 0) return this.skipped('over_budget');
    const started = performance.now();
    try {
      const value = await this.withBudget(call, left);
      this.consecutiveFailures = 0;
      return { ok: true, value };
    } catch (error) {
      // A read cut short by what its request's earlier calls spent says nothing about the store.
      if (error instanceof CacheTimeout && shared && left < budget) return this.skipped('over_budget');
      this.recordFailure(operation, key, afterWrite, error);
      return { ok: false };
    } finally {
      if (shared) work.spentMs += performance.now() - started;
    }
  }

  /**
   * A write's work after its commit while the circuit is open: it is sent all the same, not
   * awaited, and counted as lost. Sent, it lands in
   * its order on the connection when the store answers again (a paused Redis runs what queued on
   * its sockets before anything sent after it); lost, it makes this instance drop the whole cache
   * before trusting it again, and the write's follower drops it for the others (through the
   * database's cache epoch when Redis cannot be reached). A write waits for none of it.
   */
  private sendWithoutWaiting(call: () => Promise<unknown>): { ok: false } {
    try {
      call().catch(() => undefined);
    } catch {
      // A call refused at once was not sent: it is lost all the same.
    }
    this.loseWrite();
    return this.skipped('short_circuited');
  }

  private skipped(counter: 'short_circuited' | 'over_budget'): { ok: false } {
    this.stats[counter] += 1;
    return { ok: false };
  }

  /** Whether an event that may have lost an invalidation happened after the last flush began. */
  private get dirty(): boolean {
    return this.failureMarks > this.flushedMarks;
  }

  /**
   * Drops the whole cache (a generation bump), one flush at a time, with a budget of its own. It
   * covers the marks made before it began: a failure during it leaves the cache dirty.
   */
  private flushOnce(): void {
    if (this.flushing !== undefined) return;
    const marks = this.failureMarks;
    this.flushing = this.withBudget(() => this.store.flushAll(), Math.max(this.budgetMs * 10, 500))
      .then(() => {
        this.flushedMarks = Math.max(this.flushedMarks, marks);
        this.consecutiveFailures = 0;
        this.logger.warn({ msg: 'cache flushed after an outage in which invalidations may have been lost' });
      })
      .catch((error: unknown) => this.recordFailure('flush', '*', false, error))
      .finally(() => (this.flushing = undefined));
  }

  /** A write-path call that did not land: this instance flushes before trusting the store again. */
  private loseWrite(): void {
    this.failureMarks += 1;
    this.stats.lost_writes += 1;
  }

  private recordFailure(operation: string, key: string, afterWrite: boolean, error: unknown): void {
    if (afterWrite) this.loseWrite();
    this.store.failed?.();
    this.stats.failures += 1;
    if (error instanceof CacheTimeout) this.stats.timeouts += 1;
    this.consecutiveFailures += 1;
    const opening = this.consecutiveFailures >= FAILURES_TO_OPEN;
    if (opening) this.openUntil = Date.now() + OPEN_FOR_MS;
    // A store that refused a call (not merely a slow answer), or that failed often enough to open
    // the circuit, may have refused another instance's invalidation at the same moment, and that
    // write's response is sent all the same: this instance drops the whole cache before it trusts
    // the store again (a Redis Cluster refuses every slot while it promotes a replica).
    if (opening || !(error instanceof CacheTimeout)) this.failureMarks += 1;
    this.logger.warn({
      msg: opening
        ? 'cache call failed; circuit open, serving from the database'
        : 'cache call failed; serving from the database',
      operation,
      key,
      err: error instanceof Error ? error.message : String(error),
      failures: this.stats.failures,
    });
  }

  private async withBudget<T>(call: () => Promise<T>, budgetMs = this.budgetMs): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      // The rejection waits for the event loop's next check phase, after its poll phase: when
      // this process itself stalled past the budget (a busy or loaded machine), an answer that
      // reached the socket meanwhile is read first and wins. The budget is for a slow store, and
      // timers run before I/O in a loop turn, so the stall alone would otherwise count as a
      // failure (a read served without the cache, a step towards an open circuit).
      timer = setTimeout(() => setImmediate(() => reject(new CacheTimeout(budgetMs))), budgetMs);
    });
    try {
      return await Promise.race([call(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
