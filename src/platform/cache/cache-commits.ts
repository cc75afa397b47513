import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { SETTINGS, type Settings } from '../config/settings.js';
import { UnitOfWork, type Commit, type CommitFollower } from '../database/unit-of-work.js';
import { listedTables } from '../http/list/list-spec.js';
import { CacheEpoch } from './cache-epoch.js';
import { CacheService } from './cache.service.js';
import { TableGenerations } from './table-generations.js';

/**
 * The cache's side of every commit: the written tables' list generations first (a response may be
 * sent once this is done), then the write's own rebuilds. A committed write always answers its
 * success (part 7): when work after the commit fails (a Redis call, or the database re-read behind
 * a rebuild) or runs past its budget, the failure is logged and counted and the whole cache is
 * dropped (a generation bump; with Redis unreachable from here, a flush before this instance
 * trusts it again and a cache-epoch bump that makes the others drop it), so no entry from before
 * the write can be served.
 */
@Injectable()
export class CacheCommits implements CommitFollower, OnModuleInit {
  private readonly logger = new Logger('UnitOfWork');

  constructor(
    private readonly uow: UnitOfWork,
    private readonly cache: CacheService,
    private readonly generations: TableGenerations,
    private readonly epoch: CacheEpoch,
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'afterCommitTimeoutMs'>,
  ) {}

  onModuleInit(): void {
    this.uow.followCommits(this);
  }

  async follow(commit: Commit): Promise<void> {
    const tasks = commit.tables.size > 0 ? [() => this.bumpTables(commit.tables), ...commit.tasks] : commit.tasks;
    if (tasks.length === 0) return;
    const lostBefore = this.cache.stats.lost_writes;
    let failed = false;
    const work = (async () => {
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
    })();
    // The write has committed: its response must not wait on a locked table's re-read or a slow
    // cache for long (a committed write always answers its success). Past the budget the work
    // goes on in the background; its rebuilds land at their versions or are refused as older.
    if (!(await settlesWithin(work, this.settings.afterCommitTimeoutMs))) {
      failed = true;
      this.logger.warn({
        msg: 'work after a commit ran past its budget; the write answers and the cache is dropped',
        budget_ms: this.settings.afterCommitTimeoutMs,
      });
    }
    // A cache write that did not land is a failure too (the cache service itself never throws).
    if (!failed && this.cache.stats.lost_writes === lostBefore) return;
    this.cache.stats.after_commit_failures += 1;
    // Which entries are stale is not known, so none is trusted any more. When this instance cannot
    // reach the cache to drop it, the database's cache epoch makes the other instances do it.
    if (!(await this.cache.invalidateAll())) await this.epoch.bump();
  }

  // A bump that does not land counts as a lost write, which drops the whole cache (see above).
  private async bumpTables(tables: ReadonlySet<string>): Promise<void> {
    // Only tables some list page reads have a generation worth a Redis call (the webhook runs'
    // lease, the fan-out cursor and the like are written often and listed nowhere).
    const listed = new Set(listedTables());
    await this.generations.bump([...tables].filter((table) => listed.has(table)).sort());
  }
}

/** Whether `work` settles within `ms` (it runs on either way). */
async function settlesWithin(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true as const).catch(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
