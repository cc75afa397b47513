import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { AccessWatch } from '../platform/auth/access-watch.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { JobQueue, PURGE_POLICY } from '../platform/jobs/job-queue.js';
import { AccessExpiriesRepository } from './access-expiries.repository.js';

/** Instants announced per transaction. */
const BATCH = 200;

/**
 * Expiries announced as `access.lost` (part 6.17): nothing is written at the instant an
 * authority, an authority permission or a grant expires (the rules judge expiry at each decision),
 * so a job every minute announces what expired since its mark, each change with its instant as
 * `occurred_at` and `cause: "expired"`, and moves the mark, in one transaction per batch.
 */
@Injectable()
export class AccessExpiryAnnouncer implements OnModuleInit {
  private readonly logger = new Logger('AccessExpiry');

  constructor(
    private readonly queue: JobQueue,
    private readonly uow: UnitOfWork,
    private readonly expiries: AccessExpiriesRepository,
    private readonly watch: AccessWatch,
  ) {}

  onModuleInit(): void {
    this.queue.declare('announce-access-expiries', PURGE_POLICY);
    this.queue.register('announce-access-expiries', async () => ({ announced: await this.run() }));
    this.queue.scheduleEvery('announce-access-expiries', '* * * * *');
  }

  /** Announces everything expired up to now; answers how many changes. */
  async run(): Promise<number> {
    let announced = 0;
    for (;;) {
      const batch = await this.uow.run(async (tx) => {
        const { expiries, until } = await this.expiries.due(tx, BATCH);
        let changes = 0;
        for (const expiry of expiries)
          changes += await this.watch.announceExpired(
            tx,
            { users: [expiry.user_id], devices: expiry.devices },
            expiry.instant,
          );
        await this.expiries.announcedUntil(tx, until);
        return { changes, more: new Set(expiries.map((expiry) => expiry.instant.getTime())).size >= BATCH };
      });
      announced += batch.changes;
      if (!batch.more) break;
    }
    if (announced > 0) this.logger.log({ msg: 'announced expired access', changes: announced });
    return announced;
  }
}
