import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { nextAfter, parseCursor, presentEvent } from '../events/event-cursor.js';
import { EventsRepository } from '../events/events.repository.js';
import { WebhookDeliveriesRepository, type NewDelivery } from './webhook-deliveries.repository.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookRuns } from './webhook-runs.js';

/** Events read per fan-out step. */
const STEP = 500;
/** How often an idle fan-out looks at the feed again (part of the delivery lag). */
const IDLE_MS = 100;

/**
 * Follows the event feed and turns each event into one delivery per subscribed endpoint. Its
 * cursor is a row locked for the step: the step that holds it reads the events after it, inserts
 * their deliveries, asks for delivery runs and moves it, all in one transaction. Every instance
 * with workers runs the loop; whichever holds the row fans out, the others skip it, so each event
 * reaches each endpoint once, and nothing is lost if an instance dies mid-step.
 */
@Injectable()
export class WebhookFanout implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private closing = false;
  private loop: Promise<void> | undefined;

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly uow: UnitOfWork,
    private readonly events: EventsRepository,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly runs: WebhookRuns,
  ) {}

  onApplicationBootstrap(): void {
    if (this.settings.jobWorkers && this.settings.webhookWorkers) this.loop = this.follow();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    await this.loop;
  }

  private async follow(): Promise<void> {
    let failures = 0;
    while (!this.closing) {
      try {
        const fannedOut = await this.step();
        failures = 0;
        if (fannedOut < STEP) await sleep(IDLE_MS);
      } catch (error) {
        failures += 1;
        // Every tenth failure in a row is logged (a database restart, not a flood of lines).
        if (failures % 10 === 1)
          this.logger.warn({ msg: 'webhook fan-out failed; retrying', err: (error as Error).message, failures });
        await sleep(Math.min(5000, 200 * failures));
      }
    }
  }

  /** One step: answers how many events it fanned out (0 when another instance holds the cursor). */
  async step(): Promise<number> {
    return this.uow.run(async (tx) => {
      const after = await this.deliveries.fanoutCursor(tx);
      if (after === undefined) return 0;
      const page = await this.events.after(parseCursor(after), undefined, STEP, tx.db);
      const next = nextAfter(after, page, STEP);
      if (page.rows.length > 0) {
        const subscribers = await this.endpoints.subscribers(tx.db);
        const deliveries: NewDelivery[] = [];
        for (const row of page.rows) {
          const event = presentEvent(row);
          const position = BigInt(row.seq);
          for (const endpoint of subscribers)
            if (
              position > endpoint.feed_from &&
              (endpoint.event_types.includes('*') || endpoint.event_types.includes(event.type))
            )
              deliveries.push({ endpoint_id: endpoint.id, event });
        }
        // A failing endpoint's run is booked for its probe (one waiting job per endpoint and second).
        for (const [endpointId, due] of await this.deliveries.insert(tx, deliveries))
          await this.runs.request(tx, endpointId, due);
      }
      if (next !== null && next !== after) await this.deliveries.moveFanout(tx, next);
      return page.rows.length;
    });
  }
}
