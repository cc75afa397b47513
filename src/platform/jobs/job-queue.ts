import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { PgBoss, type Db, type Job, type JobWithMetadata } from 'pg-boss';
import type { EntityManager } from 'typeorm';
import { SETTINGS, type Settings } from '../config/settings.js';
import { DATABASE_URL } from '../database/database.tokens.js';
import { connectionName } from '../database/embedded-postgres.js';
import type { Tx } from '../database/unit-of-work.js';
import { RepeatedErrors } from './repeated-errors.js';

/** How a queue retries its jobs (pg-boss options); each feature declares its queues as it registers their workers. */
export interface QueuePolicy {
  readonly retryLimit: number;
  readonly retryDelay: number;
  readonly retryBackoff: boolean;
  readonly retryDelayMax?: number;
  readonly policy?: 'short';
  readonly expireInSeconds?: number;
}

/** The policy of the hourly purges: one retry a minute later (the next run catches up anyway). */
export const PURGE_POLICY: QueuePolicy = { retryLimit: 1, retryDelay: 60, retryBackoff: false };

/** A job's `type` is its queue's name. */
export type QueueName = string;

// Jobs are kept 7 days after they finish (part 6.10), and 14 days while they wait.
const KEEP_FINISHED_SECONDS = 7 * 24 * 3600;
const KEEP_WAITING_SECONDS = 14 * 24 * 3600;

/** One log line per queue (or, outside a queue, per kind of error) per this long; the rest are counted. */
const ERROR_LOG_WINDOW_MS = 30_000;

/** What pg-boss emits as `error`: a worker's adds the queue it polls. */
type QueueError = Error & { readonly queue?: string; readonly code?: string };

/** Options of a queue's workers beyond the defaults (one instance's concurrency, per-group limits). */
export interface WorkerOptions {
  readonly localConcurrency?: number;
  /** At most this many jobs of one group run at once across all instances. */
  readonly groupConcurrency?: number;
  /** How often an idle worker looks for jobs (≥ 0.5; `wake` rouses it sooner). */
  readonly pollingIntervalSeconds?: number;
}

/** How a job is sent: deduplicated by key, kept to its group, or not before a moment. */
export interface SendOptions {
  readonly singletonKey?: string;
  readonly group?: string;
  readonly startAfter?: Date;
}

/** pg-boss's view of the caller's transaction: a job sent through it exists when that commits. */
function inTransaction(tx: Tx): Db {
  return through(tx.db);
}

/** pg-boss's statements sent through one of the service's own managers (a transaction's, or the pool's). */
function through(manager: EntityManager): Db {
  return {
    executeSql: async (text: string, values?: unknown[]) => ({
      rows: await manager.query<object[]>(text, values ?? []),
    }),
  };
}

export type JobHandler<T> = (job: Job<T>, attempt: { retryCount: number; retryLimit: number }) => Promise<object>;

/**
 * pg-boss on the service's own PostgreSQL (embedded or not), started with the app and stopped
 * gracefully with it. Jobs are enqueued inside the caller's transaction, so a job exists
 * exactly when the write that asked for it (and its audit event) committed.
 */
@Injectable()
export class JobQueue implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Jobs');
  private readonly boss: PgBoss;
  private readonly policies = new Map<QueueName, QueuePolicy>();
  private readonly handlers = new Map<QueueName, { handler: JobHandler<never>; options: WorkerOptions }>();
  private readonly schedules = new Map<QueueName, string>();
  private readonly workerIds = new Map<QueueName, string[]>();
  private readonly repeatedErrors = new RepeatedErrors(ERROR_LOG_WINDOW_MS, Date.now);
  private readonly errorSweep: NodeJS.Timeout;
  private started = false;

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    @Inject(DATABASE_URL) databaseUrl: string,
  ) {
    this.boss = new PgBoss({
      connectionString: databaseUrl,
      schema: settings.jobsSchema,
      // Each queue slot polls on its own (the webhook runs add WEBHOOK_CONCURRENCY of them); a
      // smaller DB_POOL_SIZE (many instances on one PostgreSQL) shrinks the queue's pool too.
      max: Math.min(6, settings.dbPoolSize),
      application_name: connectionName(settings, `${settings.dbApplicationName}-jobs`),
      connectionTimeoutMillis: settings.dbConnectTimeoutMs,
    });
    // pg-boss reports lost connections and failed maintenance as events; an unhandled one would crash the process.
    this.boss.on('error', (error: QueueError) => this.logError(error));
    // The count of a flood's tail, once it stopped (no later line of its key would carry it).
    this.errorSweep = setInterval(() => {
      for (const { key, suppressed } of this.repeatedErrors.ended())
        this.logger.warn({ msg: 'job queue errors suppressed', key, suppressed });
    }, ERROR_LOG_WINDOW_MS).unref();
  }

  /**
   * During a database outage every worker fails its poll every half second: the errors of one
   * queue (or of one kind, outside a queue) make one line per 30 s, with how many were held back.
   */
  private logError(error: QueueError): void {
    const key = error.queue ?? String(error.code ?? error.message).slice(0, 200);
    const occurrence = this.repeatedErrors.occurred(key);
    if (!occurrence.log) return;
    this.logger.warn({
      msg: 'job queue error',
      ...(error.queue === undefined ? {} : { queue: error.queue }),
      err: error.message,
      ...(occurrence.suppressed > 0 ? { suppressed: occurrence.suppressed } : {}),
    });
  }

  /**
   * Declares a queue with its retry policy (in the owning module's `onModuleInit`): the platform
   * names no feature's queue. Queues are created at bootstrap, before any worker starts.
   */
  declare(queue: QueueName, policy: QueuePolicy): void {
    if (this.policies.has(queue)) throw new Error(`the ${queue} queue is declared twice`);
    this.policies.set(queue, policy);
  }

  /** Registers the worker of a declared queue; workers start with the app when JOB_WORKERS is on. */
  register<T>(queue: QueueName, handler: JobHandler<T>, options: WorkerOptions = {}): void {
    if (!this.policies.has(queue)) throw new Error(`the ${queue} queue is not declared`);
    this.handlers.set(queue, { handler, options });
  }

  /** The declared queues: where a job may be found by its id. */
  names(): readonly QueueName[] {
    return [...this.policies.keys()];
  }

  /** A recurring job (cron, UTC); scheduling is idempotent across instances. */
  scheduleEvery(queue: QueueName, cron: string): void {
    this.schedules.set(queue, cron);
  }

  async onModuleInit(): Promise<void> {
    await this.boss.start();
    this.started = true;
  }

  private async createQueues(): Promise<void> {
    for (const [name, policy] of this.policies) {
      if ((await this.boss.getQueue(name)) === null) {
        await this.boss
          .createQueue(name, {
            ...policy,
            deleteAfterSeconds: KEEP_FINISHED_SECONDS,
            retentionSeconds: KEEP_WAITING_SECONDS,
          })
          .catch(async (error: unknown) => {
            // Another instance created it first.
            if ((await this.boss.getQueue(name)) === null) throw error;
          });
      }
    }
  }

  /** After every module's `onModuleInit`, so all queues and workers are registered. */
  async onApplicationBootstrap(): Promise<void> {
    await this.createQueues();
    if (!this.settings.jobWorkers) return;
    for (const [queue, cron] of this.schedules) await this.boss.schedule(queue, cron);
    for (const [queue, { handler, options }] of this.handlers) {
      const retryLimit = this.policies.get(queue)?.retryLimit ?? 0;
      const { localConcurrency = 2, ...rest } = options;
      // One pg-boss worker per slot, each with its own id, so `wake` can rouse every one of them.
      const ids: string[] = [];
      for (let slot = 0; slot < localConcurrency; slot += 1)
        ids.push(
          await this.boss.work<never>(
            queue,
            { pollingIntervalSeconds: 0.5, ...rest, localConcurrency: 1 },
            async ([job]) => {
              if (job === undefined) return {};
              return handler(job, { retryCount: job.retryCount, retryLimit });
            },
          ),
        );
      this.workerIds.set(queue, ids);
    }
  }

  /** Makes this instance's idle workers of a queue look for jobs now instead of at their next poll. */
  wake(queue: QueueName): void {
    for (const id of this.workerIds.get(queue) ?? []) this.boss.notifyWorker(id);
  }

  /**
   * Enqueues inside `tx`; returns the job id. The job carries its creator (`created_by`: the
   * transaction's actor by default, null in a system flow) because who may see a job depends on it
   * (part 6.10), and a job acting on that user's authority reads it from its payload.
   */
  async enqueue(tx: Tx, queue: QueueName, data: object, createdBy = tx.actor): Promise<string> {
    const db = inTransaction(tx);
    const id = await this.boss.send(queue, { ...data, created_by: createdBy }, { db });
    if (id === null) throw new Error(`the job queue refused a ${queue} job`);
    return id;
  }

  /**
   * Enqueues inside `tx` unless a job with the same key is already waiting (then answers null:
   * the waiting one will do the work). Such a job serves whoever asked, so it has no creator.
   */
  async enqueueUnlessWaiting(tx: Tx, queue: QueueName, data: object, options: SendOptions): Promise<string | null> {
    const db = inTransaction(tx);
    return this.boss.send(queue, data, {
      db,
      ...(options.singletonKey === undefined ? {} : { singletonKey: options.singletonKey }),
      ...(options.group === undefined ? {} : { group: { id: options.group } }),
      ...(options.startAfter === undefined ? {} : { startAfter: options.startAfter }),
    });
  }

  /**
   * A job by queue and id. `via` sends the lookup through the service's own pool rather than the
   * queue's, whose few connections its workers' polls keep busy: a request asking after a job
   * (one lookup per queue) then does not wait behind them.
   */
  find(queue: QueueName, id: string, via?: EntityManager): Promise<JobWithMetadata<object> | null> {
    return this.boss.getJobById<object>(queue, id, via === undefined ? {} : { db: through(via) });
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.errorSweep);
    if (!this.started) return;
    // Finish the jobs in hand (within the shutdown budget), then close the pool.
    await this.boss.stop({
      graceful: true,
      timeout: Math.max(1000, this.settings.shutdownTimeoutMs - 1000),
      close: true,
    });
  }
}
