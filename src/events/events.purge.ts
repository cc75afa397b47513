import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { SETTINGS, type Settings } from '../config/settings.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import { JobQueue } from '../jobs/job-queue.js';
import { EventsRepository } from './events.repository.js';
import { WebhookDeliveriesRepository } from './webhooks/webhook-deliveries.repository.js';

/**
 * Events and webhook deliveries older than EVENT_RETENTION_DAYS (30) are deleted by a scheduled
 * job every hour, in batches of short transactions.
 */
@Injectable()
export class EventsPurge implements OnModuleInit {
  private readonly logger = new Logger('Events');

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly queue: JobQueue,
    private readonly uow: UnitOfWork,
    private readonly events: EventsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
  ) {}

  onModuleInit(): void {
    this.queue.register('purge-events', async () => {
      const days = this.settings.eventRetentionDays;
      const deleted = await this.inBatches((tx) => this.events.purge(tx, days));
      const deliveries = await this.inBatches((tx) => this.deliveries.purge(tx, days));
      if (deleted + deliveries > 0)
        this.logger.log({ msg: 'events and deliveries past their retention deleted', deleted, deliveries });
      return { deleted, deliveries };
    });
    this.queue.scheduleEvery('purge-events', '23 * * * *');
  }

  /** Repeats one batch in its own transaction until nothing is left; answers the total. */
  private async inBatches(batch: (tx: Tx) => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      const count = await this.uow.run(batch);
      total += count;
      if (count === 0) return total;
    }
  }
}
