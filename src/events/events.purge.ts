import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { SETTINGS, type Settings } from '../config/settings.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { JobQueue } from '../jobs/job-queue.js';
import { EventsRepository } from './events.repository.js';

/** Events older than EVENT_RETENTION_DAYS are deleted by a scheduled job every hour. */
@Injectable()
export class EventsPurge implements OnModuleInit {
  private readonly logger = new Logger('Events');

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly queue: JobQueue,
    private readonly uow: UnitOfWork,
    private readonly events: EventsRepository,
  ) {}

  onModuleInit(): void {
    this.queue.register('purge-events', async () => {
      let deleted = 0;
      for (;;) {
        const batch = await this.uow.run((tx) => this.events.purge(tx, this.settings.eventRetentionDays));
        deleted += batch;
        if (batch === 0) break;
      }
      if (deleted > 0) this.logger.log({ msg: 'events past their retention deleted', deleted });
      return { deleted };
    });
    this.queue.scheduleEvery('purge-events', '23 * * * *');
  }
}
