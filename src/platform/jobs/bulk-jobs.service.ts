import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Job } from 'pg-boss';
import type { AuthContext } from '../auth/auth-context.js';
import { AccessEvaluator } from '../auth/access-evaluator.js';
import type { PermissionCode } from '../auth/permissions.js';
import { ApiError } from '../http/api-error.js';
import { currentRequest, runInRequestContext } from '../http/request-context.js';
import { AcceptedResponse } from '../http/responses.js';
import { previewOf } from '../database/previews.js';
import { UnitOfWork, type Tx } from '../database/unit-of-work.js';
import { BulkJobItemsRepository } from './bulk-job-items.repository.js';
import { JobQueue, PURGE_POLICY } from './job-queue.js';
import { JobResultsRepository } from './job-results.repository.js';
import type { AcceptedJobDto } from './jobs.dto.js';

/**
 * A bulk route that also runs as a job (part 6.6), named by the permission it needs
 * (`authority_permissions.grant`, `inbox.delete`): each feature registers its own.
 */
export type BulkKind = PermissionCode;

/**
 * Where a bulk's permission is checked: once for the route (`route`), or per item on each item's
 * device (`per-item`, the device-scoped bulks), which then only asks that the requester is an admin.
 */
export type BulkCheck = 'route' | 'per-item';

export interface BulkOptions {
  readonly reason?: string;
  readonly dry_run?: boolean;
}

/** One item's result of a bulk. */
export interface BulkResult {
  readonly index: number;
  readonly status: string;
}

/**
 * One chunk of a bulk, inside the chunk's transaction: the same code the synchronous route runs.
 * It knows no `dry_run`: a preview's chunk runs in a transaction that rolls back.
 */
export type BulkRunner = (
  tx: Tx,
  actor: AuthContext,
  items: readonly object[],
  options: Omit<BulkOptions, 'dry_run'>,
) => Promise<{ results: readonly BulkResult[] }>;

interface BulkJobData extends BulkOptions {
  readonly kind: BulkKind;
  readonly actor_id: number;
  readonly session_id: string;
  readonly request_id: string;
  /** The items themselves are in bulk_job_items, by chunk. */
  readonly item_count?: number;
  /** Jobs enqueued before bulk_job_items carried their items here. */
  readonly items?: readonly object[];
}

/** Items per transaction: the synchronous bulk's own size, whose statements are measured. */
export const BULK_CHUNK = 1000;
/** Items a bulk accepts as a job (with `Prefer: respond-async`). */
export const BULK_JOB_MAX_ITEMS = 100_000;

/** Whether the request asked for the answer later (RFC 7240 `Prefer: respond-async`). */
export function prefersAsync(prefer: string | undefined): boolean {
  return (prefer ?? '')
    .split(',')
    .some((preference) => preference.split(';')[0]?.trim().toLowerCase() === 'respond-async');
}

/** A chunk's results numbered within the whole job. */
function atOffset<T extends { readonly index: number }>(results: readonly T[], start: number): T[] {
  return results.map((result) => ({ ...result, index: result.index + start }));
}

/** Without `Prefer: respond-async` a bulk takes at most 1000 items (part 10). */
function assertSynchronousSize(items: readonly unknown[]): void {
  if (items.length > BULK_CHUNK)
    throw ApiError.field(
      'items',
      'maxItems',
      `items must contain at most ${BULK_CHUNK} entries; send Prefer: respond-async to run up to ${BULK_JOB_MAX_ITEMS} as a job`,
    );
}

/**
 * Heavy bulks as jobs (part 6.6): the route answers 202 with the job; the worker runs the items in
 * chunks of 1000, each chunk one transaction with its writes, its audit events and its per-item
 * results (`job_results`), so results are never held in memory and a retried job resumes after the
 * last stored chunk. It acts as the requester, through the session that asked: a session revoked
 * (or a user suspended) in the meantime fails the job. The job's result is the bulk answer without
 * `results`; `GET /jobs/{job_id}/results` pages those.
 */
@Injectable()
export class BulkJobs implements OnModuleInit {
  private readonly logger = new Logger('BulkJobs');
  private readonly runners = new Map<
    BulkKind,
    { run: BulkRunner; check: BulkCheck; previewed: (results: readonly BulkResult[]) => BulkResult[] }
  >();

  constructor(
    private readonly queue: JobQueue,
    private readonly uow: UnitOfWork,
    private readonly results: JobResultsRepository,
    private readonly items: BulkJobItemsRepository,
    private readonly access: AccessEvaluator,
  ) {}

  /** Each domain registers the chunk runner of its bulk route. */
  register(
    kind: BulkKind,
    check: BulkCheck,
    run: BulkRunner,
    previewed: (results: readonly BulkResult[]) => BulkResult[] = (results) => [...results],
  ): void {
    this.runners.set(kind, { run, check, previewed });
  }

  onModuleInit(): void {
    // A retried bulk resumes after its last stored chunk.
    this.queue.declare('bulk', { retryLimit: 2, retryDelay: 5, retryBackoff: true, retryDelayMax: 60 });
    this.queue.register<BulkJobData>('bulk', (job) => this.run(job));
    // Results outlive their job by a day at most (jobs are kept 7 days after they finish).
    this.queue.declare('purge-job-results', PURGE_POLICY);
    this.queue.register('purge-job-results', async () => {
      await this.uow.run(async (tx) => {
        await this.results.purge(tx);
        await this.items.purge(tx);
      });
      return {};
    });
    this.queue.scheduleEvery('purge-job-results', '17 * * * *');
  }

  /** A bulk route's answer: the job with `Prefer: respond-async`, else at most 1000 items at once. */
  answer<T>(
    kind: BulkKind,
    actor: AuthContext,
    dto: BulkOptions & { readonly items: readonly object[] },
    async: boolean,
    now: () => Promise<T>,
  ): Promise<T | AcceptedResponse<AcceptedJobDto>> {
    if (async) return this.accept(kind, actor, dto.items, dto);
    assertSynchronousSize(dto.items);
    return now();
  }

  /** 202 with the job, enqueued in its own transaction. */
  async accept(
    kind: BulkKind,
    actor: AuthContext,
    items: readonly object[],
    options: BulkOptions,
  ): Promise<AcceptedResponse<AcceptedJobDto>> {
    const data: BulkJobData = {
      kind,
      actor_id: actor.user_id,
      session_id: actor.session_id,
      request_id: currentRequest()?.request_id ?? 'job',
      item_count: items.length,
      ...(options.reason === undefined ? {} : { reason: options.reason }),
      ...(options.dry_run === undefined ? {} : { dry_run: options.dry_run }),
    };
    const jobId = await this.uow.run(async (tx) => {
      const id = await this.queue.enqueue(tx, 'bulk', data, actor.user_id);
      await this.items.store(tx, id, items, BULK_CHUNK);
      return id;
    });
    return new AcceptedResponse({ job_id: jobId, state: 'queued' }, `/v1/admin/jobs/${jobId}`, 1);
  }

  /** The requester now: a live session of an active user whose role still reaches the route. */
  private async actor(kind: BulkKind, userId: number, sessionId: string): Promise<AuthContext> {
    const actor = await this.access.resolve(userId, sessionId).catch((error: unknown) => {
      throw new Error(
        `the requester can no longer act (${error instanceof ApiError ? error.code : 'unknown'}): user ${userId}`,
      );
    });
    // The device-scoped bulks check the route's permission per item, on each item's device.
    const allowed =
      this.runners.get(kind)?.check === 'route'
        ? this.access.decideGlobally(actor, kind).allowed
        : this.access.hasAdminAccess(actor);
    if (!allowed) throw new Error(`the requester no longer holds ${kind}: user ${userId}`);
    return actor;
  }

  private async run(job: Job<BulkJobData>): Promise<object> {
    const { kind, actor_id, session_id, request_id, reason, dry_run, items: carried } = job.data;
    const runner = this.runners.get(kind);
    if (runner === undefined) throw new Error(`no runner for bulk ${kind}`);
    const itemCount = job.data.item_count ?? carried?.length;
    if (itemCount === undefined) throw new Error(`bulk job ${job.id} names no items`);
    const context = { request_id, ip: 'job', actor_id };
    // Each chunk stores its results with its writes, atomically: what is stored is what is done.
    let { stored: offset } = await this.results.tally(job.id);
    while (offset < itemCount) {
      // Who may act is judged at each chunk, as each request would be: a session revoked, a role
      // lowered or a grant expired since the job was accepted stops it there.
      const actor = await this.actor(kind, actor_id, session_id);
      const start = offset;
      const options = reason === undefined ? {} : { reason };
      const done = await runInRequestContext(context, () =>
        dry_run === true
          ? this.previewChunk(job.id, start, carried, actor_id, async (tx, chunk) => ({
              results: runner.previewed((await runner.run(tx, actor, chunk, options)).results),
            }))
          : this.uow.run(
              async (tx) => {
                // Read chunk by chunk: a 100 000-item job never holds more than one chunk in memory.
                const chunk =
                  carried === undefined
                    ? await this.items.take(tx, job.id, start)
                    : carried.slice(start, start + BULK_CHUNK);
                if (chunk === undefined) return false;
                const { results } = await runner.run(tx, actor, chunk, options);
                await this.results.append(tx, job.id, start, atOffset(results, start));
                return true;
              },
              // The requester's writes, named from the job's payload (its stamps and audit events).
              { actor: actor_id },
            ),
      );
      if (done) {
        offset += BULK_CHUNK;
        continue;
      }
      // Not there: another attempt of this job took it (its results are then stored), or it is lost.
      const { stored } = await this.results.tally(job.id);
      if (stored <= start) throw new Error(`bulk job ${job.id} has no items stored at ${start}`);
      offset = stored;
    }
    const { stored: accepted, failed } = await this.results.tally(job.id);
    this.logger.log({ msg: 'bulk job finished', job_id: job.id, kind, accepted, failed });
    return { accepted, processed: accepted - failed, failed };
  }

  /**
   * A preview's chunk: the runner's statements in a transaction that rolls back (nothing written),
   * then its results stored in one of their own. Whether its items are still there is read in the
   * results' transaction, so a chunk already stored by another attempt is not stored twice.
   */
  private async previewChunk(
    jobId: string,
    start: number,
    carried: readonly object[] | undefined,
    actor: number,
    run: (tx: Tx, chunk: readonly object[]) => ReturnType<BulkRunner>,
  ): Promise<boolean> {
    const { outcome } = await previewOf(() =>
      this.uow.run(
        async (tx) => {
          const chunk =
            carried === undefined ? await this.items.take(tx, jobId, start) : carried.slice(start, start + BULK_CHUNK);
          return chunk === undefined ? undefined : (await run(tx, chunk)).results;
        },
        { actor },
      ),
    );
    if (outcome === undefined) return false;
    return this.uow.run(
      async (tx) => {
        if (carried === undefined && (await this.items.take(tx, jobId, start)) === undefined) return false;
        await this.results.append(tx, jobId, start, atOffset(outcome, start));
        return true;
      },
      { actor },
    );
  }
}
