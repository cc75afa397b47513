import {
  currentRequest,
  outsideRequests,
  runInRequestContext,
  type RequestContext,
} from '../../src/platform/http/request-context.js';

const context: RequestContext = { request_id: 'r', ip: '127.0.0.1', actor_id: 1 };

/** The request context a callback scheduled now sees when it runs (a real setImmediate: no clock). */
const seenLater = (arm: (schedule: () => void) => void): Promise<RequestContext | undefined> =>
  new Promise((resolve) => arm(() => setImmediate(() => resolve(currentRequest()))));

describe('request context and later work', () => {
  it('a callback armed during a request carries that request', async () => {
    expect(await runInRequestContext(context, () => seenLater((schedule) => schedule()))).toBe(context);
  });

  it('armed through outsideRequests it runs outside any request: a later flush is not charged to it (found by the review)', async () => {
    expect(
      await runInRequestContext(context, () => seenLater((schedule) => outsideRequests(schedule))),
    ).toBeUndefined();
  });
});
