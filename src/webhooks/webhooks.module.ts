import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { WebhookDeliveriesController } from './webhook-deliveries.controller.js';
import { WebhookDeliveriesPurge } from './webhook-deliveries.purge.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WebhookEndpointsController } from './webhook-endpoints.controller.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';
import { WebhookFanout } from './webhook-fanout.js';
import { WebhookRuns } from './webhook-runs.js';
import { WebhookSender } from './webhook-sender.js';

/** Webhooks (part 6.12): they follow the event feed and deliver it signed to each subscribed endpoint. */
@Module({
  imports: [EventsModule],
  controllers: [WebhookEndpointsController, WebhookDeliveriesController],
  providers: [
    WebhookEndpointsRepository,
    WebhookDeliveriesRepository,
    WebhookDeliveriesPurge,
    WebhookEndpointsService,
    WebhookRuns,
    WebhookSender,
    WebhookFanout,
  ],
})
export class WebhooksModule {}
