import { Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { CacheService } from '../cache/cache.service.js';
import { CacheEpoch } from './cache-epoch.js';
import { bumpProjectionVersions, type ProjectionScope } from './projection-versions.js';

/** What a write sees inside its transaction. */
export interface Tx {
  readonly db: EntityManager;
  /** Runs after COMMIT (cache rebuilds); never inside the transaction, never after a rollback. */
  afterCommit(task: () => Promise<void>): void;
  /**
   * Bumps projection versions as the transaction's last statements, all scopes and ids of the
   * write at once, deduplicated and sorted: every writer takes these hot rows last and in one
   * order, after its record locks, so two writes can never deadlock on them. The new versions
   * are in the returned map once the transaction has committed (for after-commit work).
   */
  bumpProjections(scope: ProjectionScope, ids: readonly number[]): ReadonlyMap<number, number>;
}

/**
 * One write = one transaction with its audit event; cache work is deferred until it committed.
 * A committed write always answers its success (part 7): when work after the commit fails (a
 * Redis call, or the database re-read behind a rebuild), the failure is logged and counted and
 * the whole cache is dropped (a generation bump; with Redis unreachable from here, a flush before
 * this instance trusts it again and a cache-epoch bump that makes the others drop it), so no
 * entry from before the write can be served.
 */
@Injectable()
export class UnitOfWork {
  private readonly logger = new Logger('UnitOfWork');

  constructor(
    private readonly dataSource: DataSource,
    private readonly cache: CacheService,
    private readonly epoch: CacheEpoch,
  ) {}

  async run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const tasks: (() => Promise<void>)[] = [];
    const result = await this.dataSource.transaction(async (db) => {
      const bumps = new Map<ProjectionScope, { ids: Set<number>; versions: Map<number, number> }>();
      const bumpProjections = (scope: ProjectionScope, ids: readonly number[]): ReadonlyMap<number, number> => {
        const pending = bumps.get(scope) ?? { ids: new Set<number>(), versions: new Map<number, number>() };
        bumps.set(scope, pending);
        for (const id of ids) pending.ids.add(id);
        return pending.versions;
      };
      const value = await work({ db, afterCommit: (task) => tasks.push(task), bumpProjections });
      for (const scope of [...bumps.keys()].sort()) {
        const pending = bumps.get(scope);
        if (pending === undefined || pending.ids.size === 0) continue;
        for (const [id, version] of await bumpProjectionVersions(db, scope, [...pending.ids]))
          pending.versions.set(id, version);
      }
      return value;
    });
    await this.afterCommit(tasks);
    return result;
  }

  /** The manager for reads outside a transaction. */
  get reader(): EntityManager {
    return this.dataSource.manager;
  }

  private async afterCommit(tasks: readonly (() => Promise<void>)[]): Promise<void> {
    if (tasks.length === 0) return;
    const lostBefore = this.cache.stats.lost_writes;
    let failed = false;
    for (const task of tasks) {
      try {
        await task();
      } catch (error) {
        failed = true;
        this.logger.error({
          msg: 'work after a commit failed; the write stands and the cache is dropped',
          err: error instanceof Error ? error.message : String(error),
        });
      }
    }
    // A cache write that did not land is a failure too (the cache service itself never throws).
    if (!failed && this.cache.stats.lost_writes === lostBefore) return;
    this.cache.stats.after_commit_failures += 1;
    // Which entries are stale is not known, so none is trusted any more. When this instance cannot
    // reach the cache to drop it, the database's cache epoch makes the other instances do it.
    if (!(await this.cache.invalidateAll())) await this.epoch.bump();
  }
}
