import { Global, Module } from '@nestjs/common';
import { SETTINGS, type Settings } from '../config/settings.js';
import { BulkJobs } from './bulk-jobs.service.js';
import { JobQueue } from './job-queue.js';
import { BulkJobItemsRepository } from './bulk-job-items.repository.js';
import { JobResultsRepository } from './job-results.repository.js';
import { JobsController } from './jobs.controller.js';
import { JobsService } from './jobs.service.js';
import { FcmPushProvider, parseFcmCredentials } from './push/fcm-push.provider.js';
import { LogPushProvider, PUSH_PROVIDER, type PushProvider } from './push/push-provider.js';

function createPushProvider(settings: Settings): PushProvider {
  if (settings.pushProvider === 'log') return new LogPushProvider();
  return new FcmPushProvider(
    parseFcmCredentials(settings.fcmCredentials ?? ''),
    settings.fcmEndpoint ?? 'https://fcm.googleapis.com',
  );
}

/** The job queue (pg-boss), `GET /jobs/{job_id}` and the push provider; domain modules register workers. */
@Global()
@Module({
  controllers: [JobsController],
  providers: [
    JobQueue,
    JobsService,
    JobResultsRepository,
    BulkJobItemsRepository,
    BulkJobs,
    { provide: PUSH_PROVIDER, inject: [SETTINGS], useFactory: createPushProvider },
  ],
  exports: [JobQueue, BulkJobs, PUSH_PROVIDER],
})
export class JobsModule {}
