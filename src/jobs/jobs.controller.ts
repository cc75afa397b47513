import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import type { ListResponse } from '../platform/http/responses.js';
import { JOB_RESULT_LIST } from '../platform/jobs/job-results.repository.js';
import { JobDto, JobResultDto } from '../platform/jobs/jobs.dto.js';
import { JobsService } from './jobs.service.js';

const SEEN_BY =
  'Seen by whoever started the job and by `super_admin` and `admin`; to anyone else it is 404 `JOB_NOT_FOUND`, as if it did not exist.';

/** `/v1/admin/jobs/{job_id}` (part 6.10). */
@ApiTags('jobs')
@Controller('v1/admin/jobs')
export class JobsController {
  constructor(private readonly jobs: JobsService) {}

  @Get(':job_id')
  @Authorize({
    permission: 'jobs.read',
  })
  @Describe({
    summary: 'A background job: state, attempts, timestamps, result or error',
    description: SEEN_BY,
    returns: JobDto,
    errors: [400, 404],
  })
  get(@Actor() actor: AuthContext, @Param('job_id') jobId: string): Promise<JobDto> {
    return this.jobs.get(actor, jobId);
  }

  @ListRoute({
    summary: "A finished bulk job's per-item results, in item order",
    description: `${SEEN_BY} 409 \`INVALID_STATE_TRANSITION\` while the job is queued or running; \`meta.total\` is always exact.`,
    returns: JobResultDto,
    spec: JOB_RESULT_LIST,
    path: ':job_id/results',
    errors: [404, 409],
  })
  @Authorize({
    permission: 'jobs.read',
  })
  results(
    @Actor() actor: AuthContext,
    @Param('job_id') jobId: string,
    @Query() query: Record<string, unknown>,
  ): Promise<ListResponse<object>> {
    return this.jobs.results(actor, jobId, query);
  }
}
