import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { inBatches } from '../platform/database/batches.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { JobQueue, PURGE_POLICY } from '../platform/jobs/job-queue.js';
import { EventsRepository } from './events.repository.js';

/**
 * Events older than EVENT_RETENTION_DAYS (30) are deleted by a scheduled job every hour, in
 * batches of short transactions (webhook deliveries are purged by the webhooks module, alike).
 */
@Injectable()
export class EventsPurge implements OnModuleInit {
  private readonly logger = new Logger('Events');

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly queue: JobQueue,
    private readonly uow: UnitOfWork,
    private readonly events: EventsRepository,
  ) {}

  onModuleInit(): void {
    this.queue.declare('purge-events', PURGE_POLICY);
    this.queue.register('purge-events', async () => {
      const deleted = await inBatches(this.uow, (tx) => this.events.purge(tx, this.settings.eventRetentionDays));
      if (deleted > 0) this.logger.log({ msg: 'events past their retention deleted', deleted });
      return { deleted };
    });
    this.queue.scheduleEvery('purge-events', '23 * * * *');
  }
}
