import { Injectable } from '@nestjs/common';
import { appendAccessEvents, EVENTS } from '../audit/audit-trail.repository.js';
import type { Tx } from '../database/unit-of-work.js';
import { currentPreview } from '../database/previews.js';
import { currentRequest } from '../http/request-context.js';
import { accessDifference, accessEntries, type AccessChange, type AccessEntry } from './access-changes.js';
import { AccessSnapshotRepository, type AccessScope } from './access-snapshot.repository.js';

/**
 * Who may do what, before and after a write, for the users it touches (part 6.17): a write calls
 * `watch` before its first change; as the transaction ends the access is read again and the
 * difference becomes `access.gained` / `access.lost` events in the same transaction, or, in a
 * preview, the preview's `access_changes`. Both sides are read through the transaction and judged
 * at one moment, so only the write's own changes differ (an expiry falling in between is the
 * expiry announcer's).
 */
@Injectable()
export class AccessWatch {
  // A change seen by two watches of one transaction (a write made of writes) is announced once.
  private readonly announced = new WeakMap<Tx, Set<string>>();

  constructor(private readonly snapshots: AccessSnapshotRepository) {}

  async watch(tx: Tx, scope: AccessScope): Promise<void> {
    if (scope.users.length === 0) return;
    const at = Date.now();
    const before = await this.entries(tx, scope, at);
    tx.beforeCommit(async () => {
      const changes = this.unannounced(tx, accessDifference(before, await this.entries(tx, scope, at)));
      const preview = currentPreview();
      if (preview !== undefined) {
        preview.access_changes.push(...changes);
        return;
      }
      const context = currentRequest();
      await appendAccessEvents(
        (text, params) => tx.write(EVENTS, text, params),
        { actor_id: context?.actor_id ?? null, request_id: context?.request_id ?? null },
        changes,
        'write',
      );
    });
  }

  /**
   * Announces what the users lost at `instant` by expiry (`access.lost`, cause `"expired"`, at
   * that instant): their access just before it and at it, from their facts now (an expired row
   * stays until revoked), judged by the same rules. Answers how many changes were announced.
   */
  async announceExpired(tx: Tx, scope: AccessScope, instant: Date): Promise<number> {
    const at = instant.getTime();
    const subjects = await this.snapshots.subjects(tx.db, scope.users);
    const authorities = await this.snapshots.authorities(tx.db, scope);
    const changes = accessDifference(
      accessEntries(subjects, authorities, at - 1),
      accessEntries(subjects, authorities, at),
    );
    await appendAccessEvents(
      (text, params) => tx.write(EVENTS, text, params),
      { actor_id: null, request_id: null },
      changes,
      'expired',
      changes.map(() => instant.toISOString()),
    );
    return changes.length;
  }

  private async entries(tx: Tx, scope: AccessScope, at: number): Promise<AccessEntry[]> {
    // One connection: the two statements run one after the other either way.
    const subjects = await this.snapshots.subjects(tx.db, scope.users);
    return accessEntries(subjects, await this.snapshots.authorities(tx.db, scope), at);
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
