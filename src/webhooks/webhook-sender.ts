import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Agent } from 'node:http';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AuditService } from '../platform/audit/audit.service.js';
import { ApiError } from '../platform/http/api-error.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { JobQueue } from '../platform/jobs/job-queue.js';
import { WebhookDeliveriesRepository, type AttemptRecord, type DueDelivery } from './webhook-deliveries.repository.js';
import { WebhookEndpointsRepository, type SigningEndpoint } from './webhook-endpoints.repository.js';
import { endpointAgent, postWebhook, DELIVERY_TIMEOUT_MS, type AttemptOutcome } from './webhook-http.js';
import { WebhookRuns, type WebhookRunJob } from './webhook-runs.js';
import { signWebhook } from './webhook-signature.js';
import { checkedAddresses, hostOf, RESOLVE_TIMEOUT_MS, type UrlPolicy } from './webhook-urls.js';

/** Deliveries taken per round, sent WINDOW at a time over kept-open connections. */
const BATCH = 100;
const WINDOW = 25;
/** A taken delivery comes due again after this if its worker dies (longer than a round can take). */
const LEASE_SECONDS = Math.ceil((RESOLVE_TIMEOUT_MS + (BATCH / WINDOW) * DELIVERY_TIMEOUT_MS) / 1000) + 30;
/** How often a run renews its hold on the endpoint. */
const RENEW_MS = 10_000;
/** Endpoints whose connections are kept open (the least recently used go first). */
const KEPT_AGENTS = 256;
/** A run yields after this long, so a busy endpoint does not keep a worker from the others. */
const RUN_BUDGET_MS = 20_000;
/**
 * A run with nothing due looks again this often, for this long, before it ends: under a steady
 * stream of writes the next deliveries are usually a few milliseconds away, and a run that ended
 * would leave them to the next one the job queue starts.
 */
const LINGER_POLL_MS = 50;
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

/**
 * The `webhook-deliver` worker: runs over an endpoint's due deliveries, and the sweep behind it.
 * One run per endpoint at a time (a lease row), rounds of up to 100 deliveries sent 25 at a time,
 * and an endpoint whose last round failed entirely gets one delivery at a time, on its backoff,
 * until one succeeds: a dead endpoint costs one attempt per backoff step, not a worker.
 */
@Injectable()
export class WebhookSender implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private readonly policy: UrlPolicy;
  private readonly agents = new Map<number, { key: string; agent: Agent }>();
  private closing = false;
  private active = 0;

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
    // One waiting job per key (an endpoint, or an endpoint and the second of its next retry):
    // every write's fan-out asks for a run of its endpoints, and one run serves them all.
    // A run lasts at most about a minute: a run lost with its instance frees its endpoint after 3.
    this.queue.declare('webhook-deliver', {
      retryLimit: 3,
      retryDelay: 5,
      retryBackoff: true,
      retryDelayMax: 60,
      policy: 'short',
      expireInSeconds: 180,
    });
    this.queue.declare('webhook-sweep', { retryLimit: 0, retryDelay: 60, retryBackoff: false });
    if (!this.settings.webhookWorkers) return;
    this.queue.register<WebhookRunJob>('webhook-deliver', (job) => this.run(job.data.endpoint_id), {
      localConcurrency: this.settings.webhookConcurrency,
      groupConcurrency: 1,
      pollingIntervalSeconds: 1,
    });
    this.queue.register('webhook-sweep', () => this.sweep());
    this.queue.scheduleEvery('webhook-sweep', '* * * * *');
  }

  /**
   * Every minute: runs for endpoints with deliveries due (a run lost with its instance, a lease
   * that ran out), and disabling endpoints failing for 3 days (whenever their last attempt was).
   */
  async sweep(): Promise<object> {
    const failing = await this.endpoints.failingFor(this.uow.reader, DISABLE_AFTER_DAYS);
    for (const id of failing) await this.disable(id);
    const due = await this.deliveries.endpointsDue(this.uow.reader);
    if (due.length > 0) await this.uow.run(async (tx) => Promise.all(due.map((id) => this.runs.request(tx, id))));
    return { endpoints: due.length, disabled: failing.length };
  }

  /** Delivers what is due to one endpoint, round after round, then books the run for the next retry. */
  async run(endpointId: number): Promise<object> {
    const holder = randomUUID();
    if (!(await this.uow.run((tx) => this.endpoints.takeRun(tx, endpointId, holder, LEASE_SECONDS)))) {
      // Another run has it; should it end before seeing what this run was asked for, this one is next.
      await this.uow.run((tx) => this.runs.request(tx, endpointId, new Date(Date.now() + 2000)));
      return { endpoint_id: endpointId, skipped: 'another run is delivering to this endpoint' };
    }
    const started = Date.now();
    let renewed = started;
    this.active += 1;
    let delivered = 0;
    let failed = 0;
    let idleSince: number | undefined;
    try {
      while (Date.now() - started < RUN_BUDGET_MS) {
        const endpoint = await this.endpoints.signing(this.uow.reader, endpointId);
        if (endpoint === undefined || !endpoint.is_active) {
          const reason =
            endpoint === undefined ? 'endpoint deleted before delivery' : 'endpoint deactivated before delivery';
          await this.uow.run((tx) => this.deliveries.failPending(tx, endpointId, reason));
          break;
        }
        // A failing endpoint waits for its probe: one window of deliveries when the time comes.
        if (!endpoint.may_send || this.closing) break;
        if (Date.now() - renewed >= RENEW_MS) {
          // Held too long without renewing (a stall): another run may have it now, so this one ends.
          if (!(await this.uow.run((tx) => this.endpoints.takeRun(tx, endpointId, holder, LEASE_SECONDS)))) break;
          renewed = Date.now();
        }
        const claim = randomUUID();
        const batch = await this.uow.run((tx) =>
          this.deliveries.claimDue(tx, endpointId, claim, endpoint.failing ? WINDOW : BATCH, LEASE_SECONDS),
        );
        if (batch.length === 0) {
          idleSince ??= Date.now();
          if (Date.now() - idleSince >= LINGER_MS || this.closing) break;
          await sleep(LINGER_POLL_MS);
          continue;
        }
        idleSince = undefined;
        const outcomes = await this.round(endpoint, batch);
        await this.uow.run(async (tx) => {
          await this.deliveries.record(tx, claim, outcomes);
          // Not attempted (the round gave up): due again, no attempt counted.
          const attempted = new Set(outcomes.map((outcome) => outcome.id));
          await this.deliveries.release(
            tx,
            claim,
            batch.filter((delivery) => !attempted.has(delivery.id)).map((delivery) => delivery.id),
          );
        });
        await this.health(endpoint, outcomes);
        delivered += outcomes.filter((outcome) => outcome.state === 'succeeded').length;
        failed += outcomes.filter((outcome) => outcome.state !== 'succeeded').length;
      }
    } finally {
      this.active -= 1;
      await this.uow.run((tx) => this.endpoints.releaseRun(tx, endpointId, holder));
      if (this.closing && this.active === 0) this.closeAgents();
    }
    const next = await this.nextRun(endpointId);
    if (next !== undefined) await this.uow.run((tx) => this.runs.request(tx, endpointId, next));
    return { endpoint_id: endpointId, delivered, failed_attempts: failed };
  }

  /** When the endpoint's next run is wanted: its next delivery due, but not before its next probe. */
  private async nextRun(endpointId: number): Promise<Date | undefined> {
    const next = await this.deliveries.nextDue(this.uow.reader, endpointId);
    if (next === undefined) return undefined;
    const endpoint = await this.endpoints.signing(this.uow.reader, endpointId);
    if (endpoint === undefined || !endpoint.is_active) return undefined;
    const probe = endpoint.failing ? (endpoint.next_probe_at?.getTime() ?? 0) : 0;
    return new Date(Math.max(next.getTime(), probe));
  }

  /**
   * One round: the host resolved and checked once, then the deliveries sent WINDOW at a time. When
   * the first WINDOW all failed, the round stops there (the endpoint is down: the rest wait for
   * its probe rather than each take a timeout); answers the outcomes of those attempted.
   */
  private async round(endpoint: SigningEndpoint, batch: readonly DueDelivery[]): Promise<AttemptRecord[]> {
    const url = new URL(endpoint.url);
    let addresses: readonly string[];
    try {
      if (url.protocol === 'http:' && !this.policy.allowHttp)
        throw new ApiError('WEBHOOK_URL_FORBIDDEN', 'http is not allowed (WEBHOOK_ALLOW_HTTP)', {});
      addresses = await checkedAddresses(hostOf(url), this.policy);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const refused = { ok: false, status: null, error: `refused: ${message}` };
      return batch.slice(0, 1).map((delivery) => this.recordOf(delivery, refused));
    }
    const agent = this.agentFor(endpoint.id, url, addresses);
    const outcomes: AttemptRecord[] = [];
    let next = 0;
    let failed = 0;
    const lane = async (): Promise<void> => {
      while (next < batch.length) {
        if (failed >= WINDOW && failed === outcomes.length) return;
        const delivery = batch[next] as DueDelivery;
        next += 1;
        const outcome = await this.attempt(endpoint, url, addresses, agent, delivery);
        outcomes.push(outcome);
        if (outcome.state !== 'succeeded') failed += 1;
      }
    };
    await Promise.all(Array.from({ length: Math.min(WINDOW, batch.length) }, lane));
    return outcomes;
  }

  /**
   * The endpoint's kept-open connections, to these very addresses. An agent that is replaced or
   * falls out of the kept ones is only let go: its idle connections close after the timeout, and
   * a round still using it finishes.
   */
  private agentFor(endpointId: number, url: URL, addresses: readonly string[]): Agent {
    const key = `${url.protocol}//${url.host}@${[...addresses].sort().join(',')}`;
    const kept = this.agents.get(endpointId);
    this.agents.delete(endpointId);
    const agent = kept?.key === key ? kept.agent : endpointAgent(url, WINDOW);
    this.agents.set(endpointId, { key, agent });
    for (const id of this.agents.keys()) {
      if (this.agents.size <= KEPT_AGENTS) break;
      this.agents.delete(id);
    }
    return agent;
  }

  /** Runs stop taking rounds; the kept connections close once the last run has ended. */
  beforeApplicationShutdown(): void {
    this.closing = true;
    if (this.active === 0) this.closeAgents();
  }

  private closeAgents(): void {
    for (const { agent } of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  /** One POST, signed with every secret that signs now; what it ends in (never throws). */
  private async attempt(
    endpoint: SigningEndpoint,
    url: URL,
    addresses: readonly string[],
    agent: Agent,
    delivery: DueDelivery,
  ): Promise<AttemptRecord> {
    let outcome: AttemptOutcome;
    try {
      const body = JSON.stringify(delivery.payload);
      const timestamp = Math.floor(Date.now() / 1000);
      outcome = await postWebhook(
        url,
        addresses,
        {
          'content-type': 'application/json',
          'user-agent': 'admin-api-webhooks/1',
          'webhook-id': delivery.event_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(endpoint.secrets, delivery.event_id, timestamp, body),
        },
        body,
        agent,
      );
    } catch (error) {
      outcome = {
        ok: false,
        status: null,
        error: `not sent: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    return this.recordOf(delivery, outcome);
  }

  private recordOf(delivery: DueDelivery, outcome: AttemptOutcome): AttemptRecord {
    if (outcome.ok)
      return { id: delivery.id, state: 'succeeded', status: outcome.status, error: null, next_attempt_at: null };
    const until = new Date(delivery.retry_until).getTime();
    const last = Date.now() >= until;
    return {
      id: delivery.id,
      state: last ? 'failed' : 'pending',
      status: outcome.status,
      error: outcome.error,
      next_attempt_at: last ? null : new Date(Math.min(Date.now() + retryDelayMs(delivery.attempts + 1), until)),
    };
  }

  /**
   * One success makes the endpoint healthy; a round of failures makes it failing (probed on its
   * own backoff) and, after 3 days of nothing but failures, disables it.
   */
  private async health(endpoint: SigningEndpoint, outcomes: readonly AttemptRecord[]): Promise<void> {
    if (outcomes.some((outcome) => outcome.state === 'succeeded')) {
      if (endpoint.failing) await this.uow.run((tx) => this.endpoints.recovered(tx, endpoint.id));
      return;
    }
    // A receiver that answers 4xx is up and refusing these events: that is about the deliveries,
    // not the endpoint, so it is not held back for them.
    if (outcomes.every((outcome) => outcome.status !== null && outcome.status >= 400 && outcome.status < 500)) return;
    const probeAt = new Date(Date.now() + retryDelayMs(endpoint.failed_rounds + 1));
    const since = await this.uow.run((tx) => this.endpoints.failedRound(tx, endpoint.id, probeAt));
    if (since !== undefined && since.getTime() <= Date.now() - DISABLE_AFTER_DAYS * 86_400_000)
      await this.disable(endpoint.id);
  }

  /** Disables an endpoint failing for 3 days, says so on the feed, and ends its pending deliveries. */
  private async disable(endpointId: number): Promise<void> {
    await this.uow.run(async (tx) => {
      const before = await this.endpoints.lockIfExists(tx, endpointId);
      if (before === undefined || !before.is_active) return;
      await this.endpoints.patch(tx, endpointId, { is_active: false, disabled_reason: 'failing', updated_by: null });
      await this.deliveries.failPending(tx, endpointId, 'endpoint disabled: failing for 3 days');
      await this.audit.record(tx, 'webhook_endpoint.disabled', endpointId, {
        before,
        reason: 'every delivery failed for 3 days',
        changes: { is_active: [true, false], disabled_reason: [before.disabled_reason, 'failing'] },
      });
    });
    this.logger.warn({ msg: 'webhook endpoint disabled: failing for 3 days', endpoint_id: endpointId });
  }
}
