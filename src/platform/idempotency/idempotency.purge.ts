import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { JobQueue, PURGE_POLICY } from '../jobs/job-queue.js';
import { IdempotencyKeysRepository } from './idempotency-keys.repository.js';

/** Expired keys (older than 24 hours) are deleted by a scheduled job every ten minutes. */
@Injectable()
export class IdempotencyPurge implements OnModuleInit {
  private readonly logger = new Logger('Idempotency');

  constructor(
    private readonly queue: JobQueue,
    private readonly store: IdempotencyKeysRepository,
  ) {}

  onModuleInit(): void {
    this.queue.declare('purge-idempotency-keys', PURGE_POLICY);
    this.queue.register('purge-idempotency-keys', async () => {
      let purged = 0;
      for (let batch = await this.store.purgeExpired(); batch > 0; batch = await this.store.purgeExpired())
        purged += batch;
      if (purged > 0) this.logger.log({ msg: 'purged expired idempotency keys', purged });
      return { purged };
    });
    this.queue.scheduleEvery('purge-idempotency-keys', '*/10 * * * *');
  }
}
