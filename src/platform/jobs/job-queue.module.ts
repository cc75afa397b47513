import { Global, Module } from '@nestjs/common';
import { BulkJobs } from './bulk-jobs.service.js';
import { BulkJobItemsRepository } from './bulk-job-items.repository.js';
import { JobQueue } from './job-queue.js';
import { JobResultsRepository } from './job-results.repository.js';

/** The job queue (pg-boss), bulk jobs and their results; feature modules register their workers and bulk kinds. */
@Global()
@Module({
  providers: [JobQueue, JobResultsRepository, BulkJobItemsRepository, BulkJobs],
  exports: [JobQueue, BulkJobs, JobResultsRepository],
})
export class JobQueueModule {}
