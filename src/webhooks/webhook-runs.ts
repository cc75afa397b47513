import { Injectable } from '@nestjs/common';
import type { Tx } from '../platform/database/unit-of-work.js';
import { JobQueue } from '../platform/jobs/job-queue.js';

/** Data of a `webhook-deliver` job: one run over an endpoint's due deliveries. */
export interface WebhookRunJob {
  readonly endpoint_id: number;
}

/**
 * Asks the job queue for delivery runs. A run serves every delivery of its endpoint that is due,
 * so one waiting run per endpoint is enough: asking again while one waits adds nothing. A run
 * for a later retry has its own key (the endpoint and that second), so it never stands in the
 * way of a run wanted now.
 */
@Injectable()
export class WebhookRuns {
  constructor(private readonly queue: JobQueue) {}

  async request(tx: Tx, endpointId: number, at?: Date): Promise<void> {
    const later = at !== undefined && at.getTime() > Date.now() + 1000;
    const job: WebhookRunJob = { endpoint_id: endpointId };
    await this.queue.enqueueUnlessWaiting(tx, 'webhook-deliver', job, {
      singletonKey: later ? `${endpointId}@${Math.ceil(at.getTime() / 1000)}` : String(endpointId),
      // One run of an endpoint at a time: a slow endpoint holds one worker, never all of them.
      group: String(endpointId),
      ...(later ? { startAfter: at } : {}),
    });
    // This instance's idle workers take it at once rather than at their next poll.
    if (!later) tx.afterCommit(() => Promise.resolve(this.queue.wake('webhook-deliver')));
  }
}
