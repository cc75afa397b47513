import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { JobQueue, PURGE_POLICY } from '../platform/jobs/job-queue.js';
import { AccessRequestsService } from './access-requests.service.js';

/** Requests recorded per transaction: each expiry also writes an event and a message with its push job. */
const BATCH = 100;

/**
 * Pending requests past their expiry are recorded `expired` (with `access_request.expired` and
 * the requester's message) by a job every minute, so within a minute of the instant (part 6.15).
 * Reads show `expired` from the instant itself, without waiting for it.
 */
@Injectable()
export class AccessRequestExpiry implements OnModuleInit {
  private readonly logger = new Logger('AccessRequests');

  constructor(
    private readonly queue: JobQueue,
    private readonly requests: AccessRequestsService,
  ) {}

  onModuleInit(): void {
    this.queue.declare('expire-access-requests', PURGE_POLICY);
    this.queue.register('expire-access-requests', async () => ({ expired: await this.run() }));
    this.queue.scheduleEvery('expire-access-requests', '* * * * *');
  }

  /** Records every lapsed pending request, a batch per transaction; answers how many. */
  async run(): Promise<number> {
    let expired = 0;
    for (let batch = await this.requests.expireDue(BATCH); batch > 0; batch = await this.requests.expireDue(BATCH))
      expired += batch;
    if (expired > 0) this.logger.log({ msg: 'recorded expired access requests', expired });
    return expired;
  }
}
