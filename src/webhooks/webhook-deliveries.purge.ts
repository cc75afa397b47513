import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { inBatches } from '../platform/database/batches.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { JobQueue, PURGE_POLICY } from '../platform/jobs/job-queue.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';

/**
 * Deliveries stay readable as long as their events (EVENT_RETENTION_DAYS), then go every hour, in
 * batches. The same hourly job forgets secrets rotated away more than 24 hours ago: they no longer
 * sign, and an endpoint never rotated again would otherwise keep them for good.
 */
@Injectable()
export class WebhookDeliveriesPurge implements OnModuleInit {
  private readonly logger = new Logger('Webhooks');

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly queue: JobQueue,
    private readonly uow: UnitOfWork,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly endpoints: WebhookEndpointsRepository,
  ) {}

  onModuleInit(): void {
    this.queue.declare('purge-webhook-deliveries', PURGE_POLICY);
    this.queue.register('purge-webhook-deliveries', async () => {
      const days = this.settings.eventRetentionDays;
      const deleted = await inBatches(this.uow, (tx) => this.deliveries.purge(tx, days));
      if (deleted > 0) this.logger.log({ msg: 'webhook deliveries past their retention deleted', deleted });
      const forgotten = await this.uow.run((tx) => this.endpoints.forgetRetiredSecrets(tx));
      return { deleted, retired_secrets_forgotten: forgotten };
    });
    this.queue.scheduleEvery('purge-webhook-deliveries', '29 * * * *');
  }
}
