import { repeatEvery, type Repeating } from '../platform/jobs/every.js';
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { appendAccessEvents, EVENTS } from '../platform/audit/audit-trail.repository.js';
import {
  accessDifference,
  accessEntries,
  type AccessChange,
  type AccessEntry,
} from '../access-model/access-changes.js';
import { AccessSnapshotRepository } from '../access-model/access-snapshot.repository.js';
import { GroupAccess } from '../access-model/group-access.service.js';
import type { Subject } from '../platform/auth/auth-context.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { sqlStateOf } from '../platform/http/error-mapping.js';
import { AccessExpiriesRepository, type DueExpiry } from './access-expiries.repository.js';
import { AccessHistoryRepository } from './access-history.repository.js';
import { subjectAt } from './access.service.js';

/** Instants announced per transaction. */
const BATCH = 200;
/**
 * How often each instance with job workers looks for expiries: an expiry is announced within this
 * plus the settling second (the queue's schedules are per minute, too coarse for "within a minute").
 */
const EVERY_MS = 20_000;

/**
 * Expiries announced as `access.lost` (part 6.17): nothing is written at the instant an
 * authority, an authority permission or a grant expires (the rules judge expiry at each decision),
 * so every 20 seconds each instance running job workers announces what expired since the shared
 * mark (instances take turns on its row lock), each change with its instant as
 * `occurred_at` and `cause: "expired"`, and moves the mark, one transaction per batch. What was
 * lost is judged from the access history just before the instant and at it, as the guards saw it
 * then: a user suspended, demoted or granted the right again after the instant does not change
 * what its expiry took.
 */
@Injectable()
export class AccessExpiryAnnouncer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('AccessExpiry');
  private repeating: Repeating | undefined;

  constructor(
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'jobWorkers'>,
    private readonly uow: UnitOfWork,
    private readonly expiries: AccessExpiriesRepository,
    private readonly history: AccessHistoryRepository,
    private readonly snapshots: AccessSnapshotRepository,
    private readonly groupAccess: GroupAccess,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.settings.jobWorkers) return;
    this.repeating = repeatEvery(
      EVERY_MS,
      () => this.run(),
      (error: unknown) =>
        this.logger.error({
          msg: 'announcing expired access failed; the next run resumes from the mark',
          err: String(error),
        }),
    );
  }

  async onModuleDestroy(): Promise<void> {
    await this.repeating?.stop();
  }

  /** Announces everything expired up to a settled moment; answers how many changes. */
  async run(): Promise<number> {
    let announced = 0;
    const settled = await this.uow
      .run((tx) => this.expiries.settledMoment(tx))
      .catch((error: unknown) => {
        // A write of an expiring row held on past the lock timeout: the next round tries again.
        if (sqlStateOf(error) === '55P03') return undefined;
        throw error;
      });
    if (settled === undefined) return 0;
    for (let more = true; more;) {
      const batch = await this.uow.run(async (tx) => {
        const { expiries, until } = await this.expiries.due(tx, settled, BATCH);
        let changes = 0;
        for (const expiry of expiries) changes += await this.announce(tx, expiry);
        if (until !== undefined) await this.expiries.announcedUntil(tx, until);
        return { changes, more: new Set(expiries.map((expiry) => expiry.instant.getTime())).size >= BATCH };
      });
      announced += batch.changes;
      more = batch.more;
    }
    if (announced > 0) this.logger.log({ msg: 'announced expired access', changes: announced });
    return announced;
  }

  private async announce(tx: Tx, expiry: DueExpiry): Promise<number> {
    const at = expiry.instant.getTime();
    const changes =
      expiry.user_id === null
        ? await this.groupChanges(tx, expiry)
        : accessDifference(
            await this.entriesAt(expiry.user_id, expiry.devices, new Date(at - 1)),
            await this.entriesAt(expiry.user_id, expiry.devices, expiry.instant),
          ).filter((change) => change.change === 'lost');
    await appendAccessEvents(
      (statement, params) => tx.write(EVENTS, statement, params),
      { actor_id: null, request_id: null },
      changes,
      'expired',
      changes.map(() => expiry.instant.toISOString()),
    );
    return changes.length;
  }

  /** The user's access at the moment, from the history (its standing, grants and authorities then). */
  private async entriesAt(userId: number, devices: readonly number[], moment: Date): Promise<AccessEntry[]> {
    const subject: Subject | undefined = subjectAt(
      (await this.history.usersAt([userId], moment)).get(userId),
      moment.getTime(),
    );
    if (subject === undefined) return [];
    const authorities = [];
    for (const device of devices)
      authorities.push(...(await this.history.deviceAuthoritiesAt(device, moment, [userId])));
    return accessEntries([subject], authorities, moment.getTime());
  }

  /**
   * What expiries through groups took at the instant: the access of every member reached (the users
   * whose membership ended, and the members of the groups named), judged just before the instant
   * and at it from the facts as they are now (the group history is not yet read as of a moment):
   * the losses that went through a group. A member removed since the instant is not announced.
   */
  private async groupChanges(tx: Tx, expiry: DueExpiry): Promise<AccessChange[]> {
    this.groupAccess.groupsChanged(tx, expiry.containers);
    const users = [...new Set([...expiry.members, ...(await this.groupAccess.reached(tx, expiry.groups))])];
    if (users.length === 0) return [];
    const at = expiry.instant.getTime();
    const subjects = await this.snapshots.subjects(tx.db, users, at - 1);
    // Memberships are read expired too, so the chains behind the authorities are the same at either moment.
    const authorities = await this.snapshots.authorities(tx.db, { users }, subjects);
    const before = accessEntries(subjects, authorities, at - 1);
    const after = accessEntries(await this.snapshots.subjects(tx.db, users, at), authorities, at);
    this.groupAccess.changed(tx, users);
    return accessDifference(before, after).filter(
      (change) => change.change === 'lost' && change.group_id !== undefined,
    );
  }
}
