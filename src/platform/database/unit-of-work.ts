import { Inject, Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type EntityManager } from 'typeorm';
import { CacheService } from '../cache/cache.service.js';
import { TableGenerations } from '../cache/table-generations.js';
import { ApiError } from '../http/api-error.js';
import { isRetryableConflict } from '../http/error-mapping.js';
import { listedTables } from '../http/list/list-spec.js';
import { CacheEpoch } from './cache-epoch.js';
import { bumpProjectionVersions, type ProjectionScope } from '../projections/projection-versions.js';
import type { Table } from './table.js';
import { TRIGGER_WRITTEN_TABLES } from '../../../migrations/index.js';
import { SETTINGS, type Settings } from '../config/settings.js';
import { currentPreview } from './previews.js';

/** What a write sees inside its transaction. */
export interface Tx {
  readonly db: EntityManager;
  /** Runs after COMMIT (cache rebuilds); never inside the transaction, never after a rollback. */
  afterCommit(task: () => Promise<void>): void;
  /**
   * Runs inside the transaction once the write's own work is done, before the projection bumps
   * (what the write changed is then all visible to it: the access it gave or took, for one).
   */
  beforeCommit(task: () => Promise<void>): void;
  /**
   * Bumps projection versions as the transaction's last statements, all scopes and ids of the
   * write at once, deduplicated and sorted: every writer takes these hot rows last and in one
   * order, after its record locks, so two writes can never deadlock on them. The new versions
   * are in the returned map once the transaction has committed (for after-commit work).
   */
  bumpProjections(scope: ProjectionScope, ids: readonly number[]): ReadonlyMap<number, number>;
  /**
   * Runs a statement that writes `tables` and records them, so their cached list pages become
   * unusable after the commit (a table generation bump); under test the unit of work checks the
   * record against PostgreSQL's own count of the transaction's writes. `changedIf` leaves the
   * record out when the result shows nothing changed (a poll that claimed no row).
   */
  write<T = unknown>(
    tables: Table | readonly Table[],
    text: string,
    params?: readonly unknown[],
    changedIf?: (result: T) => boolean,
  ): Promise<T>;
  /**
   * The resource as the API shows it after this transaction's write (repositories note every row
   * they write), for the event feed's `data`: the latest note of a record wins.
   */
  noteResource(type: string, resource: { readonly id: number | string }): void;
  resourceAfter(type: string, id: number | string): object | undefined;
}

// Under Jest every transaction's written tables are compared with what its repositories declared,
// so a forgotten declaration (a list page that would stay stale) fails the suite.
const VERIFY_WRITES = process.env.NODE_ENV === 'test';

/**
 * Rows inserted, updated or deleted per table of ours (not the job queue's schema) by this backend and not yet flushed to the shared
 * statistics. That includes earlier transactions of the same pooled connection, but nothing is
 * flushed inside a transaction, so the difference between its start and its end is its own writes.
 */
async function writeCounts(db: EntityManager): Promise<Map<string, number>> {
  const rows = await db.query<{ relname: string; n: string }[]>(
    'SELECT relname, n_tup_ins + n_tup_upd + n_tup_del AS n FROM pg_stat_xact_user_tables WHERE schemaname = current_schema()',
  );
  return new Map(rows.map((row) => [row.relname, Number(row.n)]));
}

/** Written by the database's own triggers, declared by the migrations that create them. */
const TRIGGER_BOOKKEEPING = new Set(TRIGGER_WRITTEN_TABLES);

function undeclared(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
  declared: ReadonlySet<string>,
): string[] {
  return [...after]
    .filter(([table, n]) => n > (before.get(table) ?? 0) && !declared.has(table) && !TRIGGER_BOOKKEEPING.has(table))
    .map(([table]) => table);
}

/**
 * One write = one transaction with its audit event; cache work is deferred until it committed.
 * A committed write always answers its success (part 7): when work after the commit fails (a
 * Redis call, or the database re-read behind a rebuild), the failure is logged and counted and
 * the whole cache is dropped (a generation bump; with Redis unreachable from here, a flush before
 * this instance trusts it again and a cache-epoch bump that makes the others drop it), so no
 * entry from before the write can be served.
 */
const CONFLICT_ATTEMPTS = 5;

/** Carries a preview's answer out of its transaction, which TypeORM rolls back on the throw. */
class PreviewRollback<T> extends Error {
  constructor(readonly value: T) {
    super('a preview rolls its transaction back');
  }
}
const CONFLICT_BACKOFF_MS = 15;

@Injectable()
export class UnitOfWork {
  private readonly logger = new Logger('UnitOfWork');
  /** Transactions rolled back by a deadlock or serialization failure (each one retried or answered 503). */
  conflicts = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly cache: CacheService,
    private readonly generations: TableGenerations,
    private readonly epoch: CacheEpoch,
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'afterCommitTimeoutMs'>,
  ) {}

  /**
   * Runs `work` in one transaction and its after-commit work once it committed. A deadlock or a
   * serialization failure rolls the attempt back and runs `work` again (it must only touch the
   * database through `tx`), a few times with jittered backoff; if the conflict persists the
   * client gets 503 `SERVICE_UNAVAILABLE` with `Retry-After`, never a 500.
   */
  async run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.attempt(work);
      } catch (error) {
        if (!isRetryableConflict(error)) throw error;
        this.conflicts += 1;
        if (attempt >= CONFLICT_ATTEMPTS) {
          this.logger.warn({ msg: 'write conflict persisted through the retries', attempts: attempt });
          throw ApiError.unavailable('contention');
        }
        // Jitter keeps the retries of the transactions that collided from colliding again.
        await sleep(Math.round(CONFLICT_BACKOFF_MS * attempt * (0.5 + Math.random())));
      }
    }
  }

  private async attempt<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    const tasks: (() => Promise<void>)[] = [];
    const finishing: (() => Promise<void>)[] = [];
    const written = new Set<string>();
    const previewing = currentPreview() !== undefined;
    const committed = this.dataSource.transaction(async (db) => {
      const counted = VERIFY_WRITES ? await writeCounts(db) : undefined;
      const bumps = new Map<ProjectionScope, { ids: Set<number>; versions: Map<number, number> }>();
      const bumpProjections = (scope: ProjectionScope, ids: readonly number[]): ReadonlyMap<number, number> => {
        const pending = bumps.get(scope) ?? { ids: new Set<number>(), versions: new Map<number, number>() };
        bumps.set(scope, pending);
        for (const id of ids) pending.ids.add(id);
        return pending.versions;
      };
      const write = async <T>(
        tables: Table | readonly Table[],
        text: string,
        params: readonly unknown[] = [],
        changedIf?: (result: T) => boolean,
      ): Promise<T> => {
        const result = await db.query<T>(text, [...params]);
        if (changedIf === undefined || changedIf(result)) for (const table of [tables].flat()) written.add(table.name);
        return result;
      };
      const resources = new Map<string, object>();
      const value = await work({
        db,
        afterCommit: (task) => tasks.push(task),
        beforeCommit: (task) => finishing.push(task),
        bumpProjections,
        write,
        noteResource: (type, resource) => resources.set(`${type}:${resource.id}`, resource),
        resourceAfter: (type, id) => resources.get(`${type}:${id}`),
      });
      for (const task of finishing) await task();
      if (previewing) throw new PreviewRollback(value);
      for (const scope of [...bumps.keys()].sort()) {
        const pending = bumps.get(scope);
        if (pending === undefined || pending.ids.size === 0) continue;
        written.add('projection_versions');
        for (const [id, version] of await bumpProjectionVersions(db, scope, [...pending.ids]))
          pending.versions.set(id, version);
      }
      if (counted !== undefined) {
        const missing = undeclared(counted, await writeCounts(db), written);
        if (missing.length > 0) throw new Error(`tables written outside tx.write(): ${missing.join(', ')}`);
      }
      return value;
    });
    const result = previewing
      ? await committed.then(
          () => {
            throw new Error('a preview committed');
          },
          (error: unknown) => {
            if (error instanceof PreviewRollback) return error.value as T;
            throw error;
          },
        )
      : await committed;
    if (previewing) return result;
    // List pages first: a response may be sent once the after-commit work is done.
    if (written.size > 0) tasks.unshift(() => this.bumpTables(written));
    await this.afterCommit(tasks);
    return result;
  }

  /** The manager for reads outside a transaction. */
  get reader(): EntityManager {
    return this.dataSource.manager;
  }

  // A bump that does not land counts as a lost write, which drops the whole cache (see below).
  private async bumpTables(tables: ReadonlySet<string>): Promise<void> {
    // Only tables some list page reads have a generation worth a Redis call (the webhook runs'
    // lease, the fan-out cursor and the like are written often and listed nowhere).
    const listed = new Set(listedTables());
    await this.generations.bump([...tables].filter((table) => listed.has(table)).sort());
  }

  private async afterCommit(tasks: readonly (() => Promise<void>)[]): Promise<void> {
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
