import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type EntityManager } from 'typeorm';
import { ApiError } from '../http/api-error.js';
import { isRetryableConflict } from '../http/error-mapping.js';
import {
  bumpProjectionVersions,
  MARKED_BUMPS_LOCK,
  MARKED_STALE_STEP,
  type ProjectionScope,
} from './projection-versions.js';
import type { Table } from './table.js';
import { runPreparedWrite, type Statement } from './prepared.js';
import { currentPreview, type Preview } from './previews.js';
import { currentActorId } from '../http/request-context.js';
import { WRITE_TURNS } from './database.tokens.js';
import type { WriteTurns } from './write-turns.js';

/**
 * What a committed write announces: the tables it wrote (their cached list pages are stale) and
 * the work it left for after the commit (its cache rebuilds). The cache layer follows commits
 * (`CacheCommits`); the unit of work knows no cache.
 */
export interface Commit {
  readonly tables: ReadonlySet<string>;
  readonly tasks: readonly (() => Promise<void>)[];
}

/** Carries a commit's after-commit work out; the response waits for `follow` (it never throws). */
export interface CommitFollower {
  follow(commit: Commit): Promise<void>;
}

/**
 * Looks at every transaction from inside it, at its start and just before its commit, with the
 * tables its repositories declared writing (the test suite checks those against PostgreSQL's own
 * count). Production registers none.
 */
export interface TransactionInspector<State = unknown> {
  begin(db: EntityManager): Promise<State>;
  end(db: EntityManager, state: State, declared: ReadonlySet<string>): Promise<void>;
}

/** What a write sees inside its transaction. */
export interface Tx {
  readonly db: EntityManager;
  /**
   * Runs after COMMIT (cache rebuilds); never inside the transaction, never after a rollback. A
   * task with a `key` replaces the one queued earlier under the same key, in its place: a record
   * written twice in one transaction (created, then activated) is rebuilt once, from its last row.
   */
  afterCommit(task: () => Promise<void>, key?: string): void;
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
   * `marked`: the write marks these entries stale at the new versions (`onBumped`); they move by
   * `MARKED_STALE_STEP` instead of 1, and such writes make their bumps one at a time.
   */
  bumpProjections(
    scope: ProjectionScope,
    ids: readonly number[],
    options?: { readonly marked?: boolean },
  ): ReadonlyMap<number, number>;
  /**
   * Runs inside the transaction after the projection bumps, just before COMMIT: for work that
   * needs the write's final versions (marking thousands of entries stale at them, where rebuilding
   * each after the commit would take longer than the write may wait). Never in a preview.
   */
  onBumped(task: () => Promise<void>): void;
  /**
   * Runs a statement that writes `tables` and records them, so their cached list pages become
   * unusable after the commit (announced in its `Commit`). `changedIf` leaves the record out when
   * the result shows nothing changed (a poll that claimed no row). A `preparedWrite` runs as a
   * prepared statement on the transaction's connection.
   */
  write<T = unknown>(
    tables: Table | readonly Table[],
    statement: Statement,
    params?: readonly unknown[],
    changedIf?: (result: T) => boolean,
  ): Promise<T>;
  /**
   * The resource as the API shows it after this transaction's write (repositories note every row
   * they write), for the event feed's `data`: the latest note of a record wins.
   */
  noteResource(type: string, resource: { readonly id: number | string }): void;
  resourceAfter(type: string, id: number | string): object | undefined;
  /**
   * The preview this transaction runs as (`?dry_run=true`), which rolls it back at its end: what
   * the write would change in anyone's access is collected here instead of being announced.
   */
  readonly preview: Preview | undefined;
  /**
   * Who writes (the stamps' `*_by`, audit and events): the `actor` the caller handed to `run`, else
   * the request's authenticated user as the guard recorded it, else null (a system job).
   */
  readonly actor: number | null;
  /** Whether this transaction has written the table (named) so far, through `write`. */
  wrote(table: string): boolean;
}

/** What the caller of `run` states about the work, instead of leaving it to ambient state. */
export interface WorkOptions {
  /** The user the work acts for (a job acting on its requester's authority carries it in its payload). */
  readonly actor?: number | null;
  /** The turns the write takes (`turnsFor` the items it names); one by default. */
  readonly turns?: number;
}

/**
 * One write = one transaction with its audit event; its after-commit work is handed to the commit
 * follower once it committed (the cache layer's, which also makes a committed write answer its
 * success when that work fails: part 7).
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
  private follower: CommitFollower = new RunAfterCommit(this.logger);
  private readonly inspectors: TransactionInspector[] = [];

  /** Set inside a write that holds its turn: a write it runs (nested) shares that turn. */
  private readonly turnHeld = new AsyncLocalStorage<true>();

  constructor(
    private readonly dataSource: DataSource,
    /** Absent (a unit test's unit of work): writes are not limited. */
    @Optional() @Inject(WRITE_TURNS) private readonly turns?: WriteTurns,
  ) {}

  /** The one follower of commits (the cache layer registers itself at start). */
  followCommits(follower: CommitFollower): void {
    this.follower = follower;
  }

  /** Adds a look at every transaction (the test suite's check of declared writes). */
  inspect<State>(inspector: TransactionInspector<State>): void {
    this.inspectors.push(inspector);
  }

  /**
   * Runs `work` in one transaction and its after-commit work once it committed. A deadlock or a
   * serialization failure rolls the attempt back and runs `work` again (it must only touch the
   * database through `tx`), a few times with jittered backoff; if the conflict persists the
   * client gets 503 `SERVICE_UNAVAILABLE` with `Retry-After`, never a 500.
   */
  async run<T>(work: (tx: Tx) => Promise<T>, options: WorkOptions = {}): Promise<T> {
    if (this.turns === undefined || this.turnHeld.getStore() === true) return this.runInTurn(work, options);
    // The turn covers the retries and the after-commit work (cache rebuilds), which take the
    // machine's cores as much as the transaction does.
    const end = await this.turns.take(options.turns);
    try {
      return await this.turnHeld.run(true, () => this.runInTurn(work, options));
    } finally {
      end();
    }
  }

  private async runInTurn<T>(work: (tx: Tx) => Promise<T>, options: WorkOptions): Promise<T> {
    const actor = options.actor !== undefined ? options.actor : currentActorId();
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.attempt(work, actor);
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

  private async attempt<T>(work: (tx: Tx) => Promise<T>, actor: number | null): Promise<T> {
    const tasks: (() => Promise<void>)[] = [];
    const finishing: (() => Promise<void>)[] = [];
    const bumped: (() => Promise<void>)[] = [];
    const written = new Set<string>();
    const preview = currentPreview();
    const previewing = preview !== undefined;
    const committed = this.dataSource.transaction(async (db) => {
      const looks: unknown[] = [];
      for (const inspector of this.inspectors) looks.push(await inspector.begin(db));
      const bumps = new Map<ProjectionScope, { steps: Map<number, number>; versions: Map<number, number> }>();
      let marked = false;
      const bumpProjections = (
        scope: ProjectionScope,
        ids: readonly number[],
        options?: { readonly marked?: boolean },
      ): ReadonlyMap<number, number> => {
        const pending = bumps.get(scope) ?? { steps: new Map<number, number>(), versions: new Map<number, number>() };
        bumps.set(scope, pending);
        if (options?.marked === true) marked = true;
        const step = options?.marked === true ? MARKED_STALE_STEP : 1;
        // Asked twice in one write, a version moves by the larger step once.
        for (const id of ids) pending.steps.set(id, Math.max(step, pending.steps.get(id) ?? 0));
        return pending.versions;
      };
      const write = async <T>(
        tables: Table | readonly Table[],
        statement: Statement,
        params: readonly unknown[] = [],
        changedIf?: (result: T) => boolean,
      ): Promise<T> => {
        const result =
          typeof statement === 'string'
            ? await db.query<T>(statement, [...params])
            : await runPreparedWrite<T>(db, statement, params);
        if (changedIf === undefined || changedIf(result)) for (const table of [tables].flat()) written.add(table.name);
        return result;
      };
      const resources = new Map<string, object>();
      const keyed = new Map<string, number>();
      const value = await work({
        db,
        afterCommit: (task, key) => {
          const at = key === undefined ? undefined : keyed.get(key);
          if (at !== undefined) tasks[at] = task;
          else if (key !== undefined) keyed.set(key, tasks.push(task) - 1);
          else tasks.push(task);
        },
        beforeCommit: (task) => finishing.push(task),
        bumpProjections,
        onBumped: (task) => bumped.push(task),
        write,
        noteResource: (type, resource) => resources.set(`${type}:${resource.id}`, resource),
        resourceAfter: (type, id) => resources.get(`${type}:${id}`),
        preview,
        actor,
        wrote: (table) => written.has(table),
      });
      for (const task of finishing) await task();
      if (previewing) throw new PreviewRollback(value);
      // Writes that mark entries stale make their bumps one at a time. Two of them moving different
      // scopes of one entry's version (a group's grant and a nesting reaching the same users) took
      // no row lock in common and neither counted the other: one's state, without the other's
      // change, came out at the other's marker and was stored over it (found by a review). The
      // second now waits here for the first's commit, and its markers count it.
      if (marked) await db.query('SELECT pg_advisory_xact_lock($1)', [MARKED_BUMPS_LOCK]);
      for (const scope of [...bumps.keys()].sort()) {
        const pending = bumps.get(scope);
        if (pending === undefined || pending.steps.size === 0) continue;
        written.add('projection_versions');
        for (const [id, version] of await bumpProjectionVersions(db, scope, pending.steps))
          pending.versions.set(id, version);
      }
      for (const task of bumped) await task();
      for (const [index, inspector] of this.inspectors.entries()) await inspector.end(db, looks[index], written);
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
    if (written.size > 0 || tasks.length > 0) await this.follower.follow({ tables: written, tasks });
    return result;
  }

  /** The manager for reads outside a transaction. */
  get reader(): EntityManager {
    return this.dataSource.manager;
  }
}

/** Without a cache: the after-commit tasks in order, each failure logged (the write stands). */
class RunAfterCommit implements CommitFollower {
  constructor(private readonly logger: Logger) {}

  async follow(commit: Commit): Promise<void> {
    for (const task of commit.tasks) {
      try {
        await task();
      } catch (error) {
        this.logger.error({
          msg: 'work after a commit failed; the write stands',
          err: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }
}
