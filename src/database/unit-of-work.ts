import { Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { CacheService } from '../cache/cache.service.js';
import { CacheEpoch } from './cache-epoch.js';

/** What a write sees inside its transaction. */
export interface Tx {
  readonly db: EntityManager;
  /** Runs after COMMIT (cache rebuilds); never inside the transaction, never after a rollback. */
  afterCommit(task: () => Promise<void>): void;
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
    const result = await this.dataSource.transaction((db) => work({ db, afterCommit: (task) => tasks.push(task) }));
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
