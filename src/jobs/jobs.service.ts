import { Injectable } from '@nestjs/common';
import type { JobWithMetadata } from 'pg-boss';
import type { Subject } from '../platform/auth/auth-context.js';
import { ApiError } from '../platform/http/api-error.js';
import type { ListResponse } from '../platform/http/responses.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { JobQueue } from '../platform/jobs/job-queue.js';
import { JobResultsRepository } from '../platform/jobs/job-results.repository.js';
import type { JobDto } from '../platform/jobs/jobs.dto.js';
import { creatorOf, maySeeJob } from './job-visibility.js';

type Viewer = Pick<Subject, 'user_id' | 'role'>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function stateOf(job: Pick<JobWithMetadata, 'state'>): JobDto['state'] {
  switch (job.state) {
    case 'created':
    case 'retry':
      return 'queued';
    case 'active':
      return 'running';
    case 'completed':
      return 'succeeded';
    case 'failed':
    case 'cancelled':
      return 'failed';
  }
}

function iso(value: Date | null | undefined): string | null {
  return value === null || value === undefined ? null : new Date(value).toISOString();
}

/** A failure's message only: pg-boss keeps the stack, which is never returned. */
function errorOf(output: unknown): { message: string } {
  const message =
    typeof output === 'object' && output !== null && 'message' in output ? String(output.message) : 'the job failed';
  return { message };
}

/** The answer for a missing job, and for a job the actor may not see: the two must not differ. */
function jobNotFound(jobId: string): ApiError {
  return new ApiError('JOB_NOT_FOUND', `Job ${jobId} does not exist (jobs are kept 7 days after they finish)`, {
    job_id: jobId,
  });
}

/** `GET /jobs/{job_id}`: a job's state in the contract's words, to those who may see it. */
@Injectable()
export class JobsService {
  constructor(
    private readonly queue: JobQueue,
    private readonly jobResults: JobResultsRepository,
    private readonly uow: UnitOfWork,
  ) {}

  /** A finished job's per-item results (bulk jobs; other jobs have none); 409 before it finished. */
  async results(actor: Viewer, jobId: string, query: Record<string, unknown>): Promise<ListResponse<object>> {
    const job = await this.get(actor, jobId);
    if (job.state === 'queued' || job.state === 'running')
      throw new ApiError(
        'INVALID_STATE_TRANSITION',
        `Job ${jobId} is ${job.state}: its results come when it has finished`,
        {
          from: job.state,
          action: 'read_results',
        },
      );
    return this.jobResults.page(jobId, query);
  }

  async get(actor: Viewer, jobId: string): Promise<JobDto> {
    if (!UUID.test(jobId)) throw ApiError.field('job_id', 'uuid', 'job_id must be a UUID');
    for (const type of this.queue.names()) {
      const job = await this.queue.find(type, jobId, this.uow.reader);
      if (job === null) continue;
      const createdBy = creatorOf(type, job.data);
      if (!maySeeJob(actor, createdBy)) throw jobNotFound(jobId);
      const state = stateOf(job);
      return {
        job_id: job.id,
        type,
        created_by: createdBy,
        state,
        attempts: job.state === 'created' ? 0 : job.retryCount + 1,
        created_at: iso(job.createdOn) ?? new Date(0).toISOString(),
        started_at: job.state === 'created' ? null : iso(job.startedOn),
        finished_at: state === 'succeeded' || state === 'failed' ? iso(job.completedOn) : null,
        result: state === 'succeeded' ? job.output : null,
        error: state === 'failed' ? errorOf(job.output) : null,
      };
    }
    throw jobNotFound(jobId);
  }
}
