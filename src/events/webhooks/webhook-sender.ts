import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AuditService } from '../../audit/audit.service.js';
import { SETTINGS, type Settings } from '../../config/settings.js';
import { UnitOfWork } from '../../database/unit-of-work.js';
import { JobQueue } from '../../jobs/job-queue.js';
import { WebhookDeliveriesRepository, type AttemptRecord, type DueDelivery } from './webhook-deliveries.repository.js';
import { WebhookEndpointsRepository, type SigningEndpoint } from './webhook-endpoints.repository.js';
import { postWebhook, DELIVERY_TIMEOUT_MS } from './webhook-http.js';
import { WebhookRuns, type WebhookRunJob } from './webhook-runs.js';
import { signWebhook } from './webhook-signature.js';
import type { UrlPolicy } from './webhook-urls.js';

/** Deliveries taken per round; they are sent at once, up to IN_FLIGHT at a time. */
const BATCH = 50;
const IN_FLIGHT = 10;
/** A taken delivery comes due again after this if its worker dies (longer than a round can take). */
const LEASE_SECONDS = Math.ceil((DELIVERY_TIMEOUT_MS * Math.ceil(BATCH / IN_FLIGHT)) / 1000) + 30;
/** A run yields after this long, so a busy endpoint does not keep a worker from the others. */
const RUN_BUDGET_MS = 20_000;
/**
 * A run with nothing due looks again this often, for this long, before it ends: under a steady
 * stream of writes the next deliveries are usually a few milliseconds away, and a run that ended
 * would leave them to the next one the job queue starts.
 */
const LINGER_POLL_MS = 25;
const LINGER_MS = 1000;
/** An endpoint whose deliveries all failed for this long is disabled (part 6.12). */
const DISABLE_AFTER_DAYS = 3;

/**
 * Retry delay after the n-th failed attempt: 5 s, tripling, at most 12 hours, with ±20 % jitter
 * (so the retries of many deliveries that failed together spread out). Over the 3 days a delivery
 * is retried that makes about 15 attempts.
 */
export function retryDelayMs(attempts: number): number {
  const base = Math.min(12 * 3600_000, 5000 * 3 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** The `webhook-deliver` worker: runs over an endpoint's due deliveries, and the sweep behind it. */
@Injectable()
export class WebhookSender implements OnModuleInit {
  private readonly logger = new Logger('Webhooks');
  private readonly policy: UrlPolicy;

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly uow: UnitOfWork,
    private readonly queue: JobQueue,
    private readonly audit: AuditService,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly runs: WebhookRuns,
  ) {
    this.policy = { allowHttp: settings.webhookAllowHttp, allowPrivate: settings.webhookAllowPrivate };
  }

  onModuleInit(): void {
    if (!this.settings.webhookWorkers) return;
    this.queue.register<WebhookRunJob>('webhook-deliver', (job) => this.run(job.data.endpoint_id), {
      localConcurrency: this.settings.webhookConcurrency,
      groupConcurrency: 1,
    });
    // The safety net: a run lost with its instance, or a lease that ran out, is picked up here.
    this.queue.register('webhook-sweep', async () => {
      const due = await this.deliveries.endpointsDue(this.uow.reader);
      if (due.length > 0) await this.uow.run(async (tx) => Promise.all(due.map((id) => this.runs.request(tx, id))));
      return { endpoints: due.length };
    });
    this.queue.scheduleEvery('webhook-sweep', '* * * * *');
  }

  /** Delivers what is due to one endpoint, round after round, then books the run for the next retry. */
  async run(endpointId: number): Promise<object> {
    const started = Date.now();
    let sent = 0;
    let failed = 0;
    let idleSince: number | undefined;
    while (Date.now() - started < RUN_BUDGET_MS) {
      const batch = await this.uow.run((tx) => this.deliveries.claimDue(tx, endpointId, BATCH, LEASE_SECONDS));
      if (batch.length === 0) {
        idleSince ??= Date.now();
        if (Date.now() - idleSince >= LINGER_MS) break;
        await sleep(LINGER_POLL_MS);
        continue;
      }
      idleSince = undefined;
      const endpoint = await this.endpoints.signing(this.uow.reader, endpointId);
      if (endpoint === undefined || !endpoint.is_active) {
        const reason =
          endpoint === undefined ? 'endpoint deleted before delivery' : 'endpoint deactivated before delivery';
        await this.uow.run((tx) => this.deliveries.failPending(tx, endpointId, reason));
        break;
      }
      const outcomes = await inBatches(batch, IN_FLIGHT, (delivery) => this.attempt(endpoint, delivery));
      await this.settle(endpoint, outcomes);
      sent += outcomes.filter((outcome) => outcome.state === 'succeeded').length;
      failed += outcomes.filter((outcome) => outcome.state !== 'succeeded').length;
    }
    const next = await this.deliveries.nextDue(this.uow.reader, endpointId);
    if (next !== undefined) await this.uow.run((tx) => this.runs.request(tx, endpointId, next));
    return { endpoint_id: endpointId, delivered: sent, failed_attempts: failed };
  }

  /** One POST, signed with every secret that signs now; what it ends in. */
  private async attempt(endpoint: SigningEndpoint, delivery: DueDelivery): Promise<AttemptRecord> {
    const body = JSON.stringify(delivery.payload);
    const timestamp = Math.floor(Date.now() / 1000);
    const outcome = await postWebhook(
      new URL(endpoint.url),
      {
        'content-type': 'application/json',
        'user-agent': 'admin-api-webhooks/1',
        'webhook-id': delivery.event_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(endpoint.secrets, delivery.event_id, timestamp, body),
      },
      body,
      this.policy,
    );
    const attempts = delivery.attempts + 1;
    if (outcome.ok)
      return { id: delivery.id, state: 'succeeded', status: outcome.status, error: null, next_attempt_at: null };
    const until = new Date(delivery.retry_until).getTime();
    const next = Math.min(Date.now() + retryDelayMs(attempts), until);
    const last = Date.now() >= until;
    return {
      id: delivery.id,
      state: last ? 'failed' : 'pending',
      status: outcome.status,
      error: outcome.error,
      next_attempt_at: last ? null : new Date(next),
    };
  }

  /**
   * Records a round's outcomes with the endpoint's health: one success makes it healthy; a round
   * of failures after 3 days of nothing but failures disables it, says so on the event feed
   * (`webhook_endpoint.disabled`), and ends its pending deliveries.
   */
  private async settle(endpoint: SigningEndpoint, outcomes: readonly AttemptRecord[]): Promise<void> {
    const anySucceeded = outcomes.some((outcome) => outcome.state === 'succeeded');
    await this.uow.run(async (tx) => {
      await this.deliveries.record(tx, outcomes);
      if (anySucceeded) {
        await this.endpoints.recovered(tx, endpoint.id);
        return;
      }
      const since = await this.endpoints.failingFor(tx, endpoint.id, DISABLE_AFTER_DAYS);
      if (since === undefined) return;
      const before = await this.endpoints.lock(tx, endpoint.id);
      if (!before.is_active) return;
      await this.endpoints.patch(tx, endpoint.id, { is_active: false, disabled_reason: 'failing', updated_by: null });
      await this.deliveries.failPending(tx, endpoint.id, 'endpoint disabled: failing for 3 days');
      await this.audit.record(tx, 'webhook_endpoint.disabled', endpoint.id, {
        reason: `every delivery failed since ${since.toISOString()}`,
        changes: { is_active: [true, false], disabled_reason: [before.disabled_reason, 'failing'] },
      });
      this.logger.warn({ msg: 'webhook endpoint disabled: failing for 3 days', endpoint_id: endpoint.id });
    });
  }
}

/** `work` over every item, at most `width` at a time; results in the items' order. */
async function inBatches<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}
