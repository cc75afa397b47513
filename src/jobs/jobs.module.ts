import { Module } from '@nestjs/common';
import { JobsController } from './jobs.controller.js';
import { JobsService } from './jobs.service.js';

/** `GET /jobs/{job_id}` and its results (part 6.10): who may see a job, and its pages of results. */
@Module({
  controllers: [JobsController],
  providers: [JobsService],
})
export class JobsModule {}
