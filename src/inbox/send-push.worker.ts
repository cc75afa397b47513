import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { NOW } from '../platform/projections/resource-table.js';
import type { Job } from 'pg-boss';
import type { PushTarget } from '../mobile-devices/mobile-devices.repository.js';
import { MobileDevicesService } from '../mobile-devices/mobile-devices.service.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { EventsRepository } from '../events/events.repository.js';
import { JobQueue } from '../platform/jobs/job-queue.js';
import { PUSH_PROVIDER, type PushOutcome, type PushProvider } from './push/push-provider.js';
import { MessagesRepository } from './messages.repository.js';
import { PushDeliveriesRepository } from './push-deliveries.repository.js';

interface SendPushData {
  readonly message_id: number;
  readonly title: string | null;
  readonly body: string | null;
}

/** The job's result (part 6.10). */
export interface SendPushResult {
  readonly message_id: number;
  readonly devices: number;
  readonly sent: number;
  readonly failed: number;
  readonly deactivated: number;
}

const BODY_PREVIEW = 240;

/**
 * Delivers a message to every active mobile device of its recipient. Each attempt is recorded
 * in `push_deliveries`; a retry skips devices already settled, so nobody is pushed twice. A
 * token the provider calls unregistered deactivates its device; transient failures make the
 * job retry with backoff until its last attempt, where they count as failed.
 */
@Injectable()
export class SendPushWorker implements OnModuleInit {
  private readonly logger = new Logger('SendPush');

  constructor(
    private readonly queue: JobQueue,
    @Inject(PUSH_PROVIDER) private readonly provider: PushProvider,
    private readonly devices: MobileDevicesService,
    private readonly messages: MessagesRepository,
    private readonly uow: UnitOfWork,
    private readonly deliveries: PushDeliveriesRepository,
    private readonly events: EventsRepository,
  ) {}

  onModuleInit(): void {
    this.queue.declare('send-push', { retryLimit: 3, retryDelay: 1, retryBackoff: true, retryDelayMax: 60 });
    this.queue.register<SendPushData>('send-push', (job, attempt) =>
      this.deliver(job, attempt.retryCount >= attempt.retryLimit),
    );
  }

  async deliver(job: Job<SendPushData>, lastAttempt: boolean): Promise<SendPushResult> {
    const message = await this.messages.find(this.uow.reader, job.data.message_id);
    if (message === undefined || message.is_deleted) return this.summary(job, job.data.message_id);
    const settled = await this.deliveries.settledDevices(job.id);
    const targets = (await this.devices.activeTargets(message.user_id)).filter((target) => !settled.has(target.id));
    const payload = {
      title: job.data.title ?? message.title,
      body: job.data.body ?? message.body.slice(0, BODY_PREVIEW),
      data: {
        message_id: String(message.id),
        type: message.type,
        ...(message.conversation_id === null ? {} : { conversation_id: message.conversation_id }),
      },
    };
    let retryable = 0;
    for (const target of targets) {
      const outcome = await this.attempt(target, payload);
      if (outcome.kind === 'retryable' && !lastAttempt) retryable += 1;
      const settledOutcome: PushOutcome =
        outcome.kind === 'retryable' && lastAttempt ? { kind: 'failed', error: outcome.error } : outcome;
      await this.uow.run(async (tx) => {
        await this.deliveries.record(tx, {
          job_id: job.id,
          message_id: message.id,
          mobile_device_id: target.id,
          provider: this.provider.name,
          outcome: settledOutcome,
        });
        // The feed hears of each device's final outcome (part 6.12), not of attempts still retried.
        if (settledOutcome.kind !== 'retryable')
          await this.events.append(tx, null, null, [
            {
              type: settledOutcome.kind === 'sent' ? 'push.delivered' : 'push.failed',
              resource_type: 'inbox_message',
              resource_id: String(message.id),
              data: {
                message_id: message.id,
                mobile_device_id: target.id,
                user_id: message.user_id,
                error: settledOutcome.kind === 'sent' ? null : settledOutcome.error,
              },
            },
          ]);
      });
      if (outcome.kind === 'unregistered') await this.devices.deactivateUnregistered(target.id);
    }
    if (targets.length > 0) await this.markPushed(message.id);
    if (retryable > 0) {
      this.logger.warn({ msg: 'push deliveries failed transiently; the job will retry', job_id: job.id, retryable });
      throw new Error(`${retryable} deliveries failed transiently; retrying`);
    }
    return this.summary(job, message.id);
  }

  private async attempt(
    target: PushTarget,
    payload: { title: string; body: string; data: Record<string, string> },
  ): Promise<PushOutcome> {
    try {
      return await this.provider.send({ token: target.push_token, ...payload });
    } catch (error) {
      return { kind: 'retryable', error: error instanceof Error ? error.message : String(error) };
    }
  }

  private async markPushed(messageId: number): Promise<void> {
    await this.uow.run(async (tx) => {
      await this.messages.patch(tx, messageId, { last_pushed_at: NOW });
    });
  }

  private async summary(job: Job<SendPushData>, messageId: number): Promise<SendPushResult> {
    return { message_id: messageId, ...(await this.deliveries.tally(job.id)) };
  }
}
