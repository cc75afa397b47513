import { RepeatedErrors } from '../../src/platform/jobs/repeated-errors.js';

/** The job queue's log during a database outage: one line per queue per 30 s, with a count. */
describe('RepeatedErrors', () => {
  let clock = 0;
  const errors = (): RepeatedErrors => new RepeatedErrors(30_000, () => clock);
  beforeEach(() => {
    clock = 1_000_000;
  });

  it('logs the first occurrence of a key, counts the rest of its window, and hands the count to the next line', () => {
    const log = errors();
    expect(log.occurred('send-push')).toEqual({ log: true, suppressed: 0 });
    // Workers failing their polls every 100 ms for the rest of the window.
    for (let step = 1; step < 300; step += 1) {
      clock += 100;
      expect(log.occurred('send-push')).toEqual({ log: false });
    }
    clock += 100; // 30 s after the first line
    expect(log.occurred('send-push')).toEqual({ log: true, suppressed: 299 });
    clock += 100;
    expect(log.occurred('send-push')).toEqual({ log: false });
  });

  it('keeps a window per key: another queue’s first error is logged at once', () => {
    const log = errors();
    log.occurred('send-push');
    log.occurred('send-push');
    expect(log.occurred('webhook-run')).toEqual({ log: true, suppressed: 0 });
    expect(log.occurred('webhook-run')).toEqual({ log: false });
    clock += 30_000;
    expect(log.occurred('send-push')).toEqual({ log: true, suppressed: 1 });
    expect(log.occurred('webhook-run')).toEqual({ log: true, suppressed: 1 });
  });

  it('reports a flood’s tail once its window is over, and only once', () => {
    const log = errors();
    log.occurred('send-push');
    log.occurred('send-push');
    log.occurred('send-push');
    log.occurred('purge-events');
    clock += 29_999;
    expect(log.ended()).toEqual([]);
    clock += 1;
    expect(log.ended()).toEqual([{ key: 'send-push', suppressed: 2 }]);
    expect(log.ended()).toEqual([]);
    // After the outage a new error is news again, with nothing counted twice.
    expect(log.occurred('send-push')).toEqual({ log: true, suppressed: 0 });
  });
});
