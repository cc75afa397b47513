import { Module } from '@nestjs/common';
import { EventsController } from './events.controller.js';
import { EventsPurge } from './events.purge.js';
import { EventsRepository } from './events.repository.js';
import { EventsService } from './events.service.js';
import { WebhookDeliveriesController } from './webhooks/webhook-deliveries.controller.js';
import { WebhookDeliveriesRepository } from './webhooks/webhook-deliveries.repository.js';
import { WebhookEndpointsController } from './webhooks/webhook-endpoints.controller.js';
import { WebhookEndpointsRepository } from './webhooks/webhook-endpoints.repository.js';
import { WebhookEndpointsService } from './webhooks/webhook-endpoints.service.js';
import { WebhookFanout } from './webhooks/webhook-fanout.js';
import { WebhookRuns } from './webhooks/webhook-runs.js';
import { WebhookSender } from './webhooks/webhook-sender.js';

/**
 * The event feed (part 6.12): audit events and worker events, by cursor, in commit order; and
 * webhooks, which follow the same feed and deliver it signed to each subscribed endpoint.
 */
@Module({
  controllers: [EventsController, WebhookEndpointsController, WebhookDeliveriesController],
  providers: [
    EventsRepository,
    EventsService,
    EventsPurge,
    WebhookEndpointsRepository,
    WebhookDeliveriesRepository,
    WebhookEndpointsService,
    WebhookRuns,
    WebhookSender,
    WebhookFanout,
  ],
  exports: [EventsRepository],
})
export class EventsModule {}
