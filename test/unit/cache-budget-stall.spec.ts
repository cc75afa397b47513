import { Logger } from '@nestjs/common';
import type { CacheStore } from '../../src/platform/cache/cache-store.js';
import { CacheService } from '../../src/platform/cache/cache.service.js';

/*
 * A cache call's budget is for a slow store, not for this process being busy. When the process
 * itself stalls past the budget while the store's answer is already waiting, the answer wins.
 *
 * The order of the event loop is the gate, not a clock: the call and the stall happen in a check
 * phase (a setImmediate callback), and the store answers in the next check phase (an immediate
 * queued by the call). In the next loop turn the timers phase comes first and finds the budget's
 * timer due: had it rejected there, the answer waiting behind it would have been discarded.
 */

/** A store the service guards (kind `redis`); the calls below never reach its methods. */
const store = { kind: 'redis', failed: () => undefined } as unknown as CacheStore;
const BUDGET_MS = 2;

/** Keeps this thread busy until the budget's timer is surely due (how long it spins is not asserted). */
function stallPastBudget(): void {
  const until = performance.now() + BUDGET_MS * 5;
  while (performance.now() < until) {
    // busy: the process itself is late, the store is not
  }
}

describe('a cache call when the process stalls past its budget', () => {
  it('takes the answer that arrived during the stall instead of counting a timeout', async () => {
    const service = new CacheService(store, 60_000, BUDGET_MS, new Logger('test', { timestamp: false }));
    Logger.overrideLogger(false);
    const result = await new Promise<Awaited<ReturnType<typeof service.call<string>>>>((settled) =>
      setImmediate(() => {
        const call = service.call('get', 'k', () => new Promise<string>((answer) => setImmediate(() => answer('ok'))));
        stallPastBudget();
        void call.then(settled);
      }),
    );
    expect(result).toEqual({ ok: true, value: 'ok' });
    expect(service.stats.timeouts).toBe(0);
    expect(service.stats.failures).toBe(0);
  });

  it('still ends a call the store does not answer within the budget', async () => {
    const service = new CacheService(store, 60_000, BUDGET_MS, new Logger('test', { timestamp: false }));
    Logger.overrideLogger(false);
    const result = await service.call('get', 'k', () => new Promise<string>(() => undefined));
    expect(result).toEqual({ ok: false });
    expect(service.stats.timeouts).toBe(1);
  });
});
