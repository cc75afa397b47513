import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { appendAccessEvents, EVENTS } from '../platform/audit/audit-trail.repository.js';
import type { Tx } from '../platform/database/unit-of-work.js';
import { currentRequest } from '../platform/http/request-context.js';
import { accessChanges, type AccessChange } from './access-changes.js';
import type { Subject } from '../platform/auth/auth-context.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import { AccessSnapshotRepository, type AccessScope } from './access-snapshot.repository.js';
import { AccessEventDeferralsRepository } from './access-event-deferrals.repository.js';
import { DEFERRED_EVENTS_QUEUE } from './deferred-access-events.js';
import { JobQueue } from '../platform/jobs/job-queue.js';

/** More changes than this in one watch are appended after the commit, by a job (part 6.17). */
export const DEFER_ABOVE = 1000;

/** The facts a watch read before the write, judged only once the write is done. */
interface Facts {
  readonly subjects: Subject[];
  readonly authorities: AuthorityFacts[];
}

/**
 * Who may do what, before and after a write, for the users it touches (part 6.17): a write calls
 * `watch` before its first change; as the transaction ends the facts are read again and both sides
 * are judged by the rules at one moment, the watch's start, so only the write's own changes
 * differ (something expiring while the write ran is the expiry announcer's: it judges the history
 * at the instant). The difference becomes `access.gained` / `access.lost` events in the same
 * transaction (more than 1 000: stored, and appended by `DeferredAccessEvents` after the commit)
 * or, in a preview, the preview's `access_changes`.
 */
@Injectable()
export class AccessWatch {
  // A change seen by two watches of one transaction (a write made of writes) is announced once.
  private readonly announced = new WeakMap<Tx, Set<string>>();

  constructor(
    private readonly snapshots: AccessSnapshotRepository,
    private readonly deferrals: AccessEventDeferralsRepository,
    private readonly queue: JobQueue,
  ) {}

  async watch(tx: Tx, scope: AccessScope): Promise<void> {
    if (scope.users.length === 0) return;
    const at = Date.now();
    const before = scope.created === true ? { subjects: [], authorities: [] } : await this.facts(tx.db, scope, at);
    tx.beforeCommit(async () => {
      // Users this transaction created can hold only what it wrote: no other transaction can
      // refer to them yet. With no authority written and no group, they hold none to read.
      const noAuthorities = scope.created === true && !tx.wrote('authorities');
      const after = await this.facts(tx.db, scope, at, noAuthorities);
      const only = scope.permissions === undefined ? undefined : new Set(scope.permissions);
      const changes = this.unannounced(tx, accessChanges(before, after, at, only));
      if (tx.preview !== undefined) {
        tx.preview.access_changes.push(...changes);
        return;
      }
      const context = currentRequest();
      const by = { actor_id: tx.actor, request_id: context?.request_id ?? null };
      if (changes.length > DEFER_ABOVE) {
        // Thousands of events in the write's own transaction would hold the feed's commit lock
        // through all of them: stored now, appended by a job within seconds of the commit.
        await this.deferrals.defer(tx, by, changes);
        await this.queue.enqueue(tx, DEFERRED_EVENTS_QUEUE, {}, null);
        tx.afterCommit(() => Promise.resolve(this.queue.wake(DEFERRED_EVENTS_QUEUE)));
        return;
      }
      await appendAccessEvents(
        (statement, params) => tx.write(EVENTS, statement, params),
        { actor_id: tx.actor, request_id: context?.request_id ?? null },
        changes,
        'write',
      );
    });
  }

  // One connection: the two statements run one after the other either way.
  private async facts(db: EntityManager, scope: AccessScope, at: number, noAuthorities = false): Promise<Facts> {
    const subjects = await this.snapshots.subjects(db, scope.users, at);
    if (noAuthorities && subjects.every((subject) => (subject.groups ?? []).length === 0))
      return { subjects, authorities: [] };
    return { subjects, authorities: await this.snapshots.authorities(db, scope, subjects) };
  }

  private unannounced(tx: Tx, changes: AccessChange[]): AccessChange[] {
    const seen = this.announced.get(tx) ?? new Set<string>();
    this.announced.set(tx, seen);
    return changes.filter((change) => {
      const key = `${change.user_id}/${change.device_id}/${change.permission_code}/${change.change}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }
}
