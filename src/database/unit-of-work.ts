import { Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { CacheService } from '../cache/cache.service.js';

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
 * the whole cache is dropped (a generation bump, or a flush before Redis is trusted again), so
 * no entry from before the write can be served.
 */
@Injectable()
export class UnitOfWork {
  private readonly logger = new Logger('UnitOfWork');

  constructor(
    private readonly dataSource: DataSource,
    private readonly cache: CacheService,
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
    let failed = false;
    for (const task of tasks) {
      try {
        await task();
      } catch (error) {
        failed = true;
        this.cache.stats.after_commit_failures += 1;
        this.logger.error({ msg: 'work after a commit failed; the write stands and the cache is dropped', err: error instanceof Error ? error.message : String(error) });
      }
    }
    // Which entries a failed rebuild left behind is not known, so none is trusted any more.
    if (failed) await this.cache.invalidateAll();
  }
}
