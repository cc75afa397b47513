import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { appendAccessEvents, EVENTS } from '../platform/audit/audit-trail.repository.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { repeatEvery, type Repeating } from '../platform/jobs/every.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { JobQueue } from '../platform/jobs/job-queue.js';
import { AccessEventDeferralsRepository } from './access-event-deferrals.repository.js';

export const DEFERRED_EVENTS_QUEUE = 'access-events-deferred';
/** Every instance running job workers also looks for chunks left behind (a job lost with its worker). */
const SWEEP_EVERY_MS = 15_000;

/**
 * Access-change events appended after the commit (part 6.17): a write whose changes exceed 1 000
 * stores them (`AccessWatch`) and queues this job in its transaction. The job appends the events
 * chunk by chunk, each chunk's events and its deletion in one transaction, with the write's own
 * event as their cause and its time as their `occurred_at`: an instance that dies mid-way leaves
 * the chunks it had not finished to the retry or to another instance's sweep, and a chunk's row
 * lock keeps two instances off the same chunk, so no change is lost or appended twice.
 */
@Injectable()
export class DeferredAccessEvents implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('AccessEvents');
  private repeating: Repeating | undefined;

  constructor(
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'jobWorkers'>,
    private readonly uow: UnitOfWork,
    private readonly queue: JobQueue,
    private readonly deferrals: AccessEventDeferralsRepository,
  ) {}

  onModuleInit(): void {
    // A crashed worker's job comes back after 30 s; the sweep may take its chunks sooner.
    this.queue.declare(DEFERRED_EVENTS_QUEUE, {
      retryLimit: 20,
      retryDelay: 2,
      retryBackoff: false,
      expireInSeconds: 30,
    });
    this.queue.register(DEFERRED_EVENTS_QUEUE, async () => ({ appended: await this.drain() }));
  }

  onApplicationBootstrap(): void {
    if (!this.settings.jobWorkers) return;
    this.repeating = repeatEvery(
      SWEEP_EVERY_MS,
      () => this.drain(),
      (error: unknown) =>
        this.logger.error({
          msg: 'appending deferred access events failed; the next sweep resumes',
          err: String(error),
        }),
    );
  }

  async onModuleDestroy(): Promise<void> {
    await this.repeating?.stop();
  }

  /** Appends every chunk waiting (and visible); answers how many events. */
  async drain(): Promise<number> {
    let appended = 0;
    for (;;) {
      const step = await this.step();
      if (step === undefined) return appended;
      appended += step;
    }
  }

  /** One chunk, in one transaction: its events and its deletion; undefined when none is left. */
  step(): Promise<number | undefined> {
    return this.uow.run(async (tx) => {
      const chunk = await this.deferrals.next(tx);
      if (chunk === undefined) return undefined;
      await appendAccessEvents(
        (statement, params) => tx.write(EVENTS, statement, params),
        { actor_id: chunk.actor_id, request_id: chunk.request_id },
        chunk.changes,
        chunk.cause ?? 'null',
        chunk.changes.map(() => chunk.occurred_at),
      );
      await this.deferrals.done(tx, chunk.id);
      return chunk.changes.length;
    });
  }
}
