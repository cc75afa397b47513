import { Controller, Get, Param } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../auth/authorize.decorator.js';
import { JobDto } from './jobs.dto.js';
import { JobsService } from './jobs.service.js';

/** `/v1/admin/jobs/{job_id}` (part 6.10). */
@ApiTags('jobs')
@Controller('v1/admin/jobs')
export class JobsController {
  constructor(private readonly jobs: JobsService) {}

  @Get(':job_id')
  @Authorize({
    permission: 'jobs.read',
    summary: 'A background job: state, attempts, timestamps, result or error',
    returns: JobDto,
    errors: [400, 404],
  })
  get(@Param('job_id') jobId: string): Promise<JobDto> {
    return this.jobs.get(jobId);
  }
}
