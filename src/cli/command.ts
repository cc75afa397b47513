import { parseArgs } from 'node:util';
import { Logger } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { createCacheService } from '../platform/cache/cache.module.js';
import { TableGenerations } from '../platform/cache/table-generations.js';
import { createDataSource } from '../platform/database/data-source.js';
import { migrate } from '../platform/database/migrate.js';
import type { Settings } from '../platform/config/settings.js';

/** Messages go to stderr so that stdout carries only the command's result (a token, an id). */
/** Nest's logger writes warnings to stdout, which a command keeps for its result. */
class QuietLogger extends Logger {
  override log(): void {}
  override warn(): void {}
  override error(): void {}
}

export function say(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** A problem the operator can fix (bad option, unknown user); printed as one line, exit code 1. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface Command {
  readonly summary: string;
  /** Option synopsis shown in the usage text. */
  readonly usage?: string;
  /** Each option with what it means and its rule, for `<command> --help`. */
  readonly options?: readonly (readonly [flag: string, meaning: string])[];
  /** Checks the options before the database is resolved (and an embedded one started); throws `CliError`. */
  validate?(args: readonly string[]): void;
  run(settings: Settings, databaseUrl: string, args: readonly string[]): Promise<number>;
}

/** Applies pending migrations first, as `npm start` does: on a fresh clone the CLI may run before the server ever did. */
export async function withDatabase<T>(
  settings: Settings,
  databaseUrl: string,
  work: (dataSource: DataSource) => Promise<T>,
): Promise<T> {
  const applied = await migrate(settings, databaseUrl);
  if (applied.length > 0) say(`applied ${applied.length} migration(s)`);
  const dataSource = createDataSource(settings, databaseUrl, 'admin-api-cli');
  await dataSource.initialize();
  try {
    return await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * What a CLI write does to the running servers' caches. In the write's own transaction it moves
 * the cache epoch, which every instance polls each CACHE_EPOCH_POLL_MS (an in-process cache
 * included), unless Redis can be told more precisely after the commit: `tables` bumps only those
 * tables' list-page generations. A Redis that cannot be reached falls back to the epoch.
 */
export class ServerCaches {
  constructor(
    private readonly settings: Settings,
    private readonly databaseUrl: string,
    /** The tables the write touches; undefined: anything cached may be stale (drop it all). */
    private readonly tables?: readonly string[],
  ) {}

  /** In the write's transaction. */
  async inTransaction(db: EntityManager): Promise<void> {
    if (this.settings.redisUrl === undefined || this.tables === undefined) await moveCacheEpoch(db);
  }

  /** After the commit. */
  async afterCommit(): Promise<void> {
    if (this.settings.redisUrl === undefined) return;
    // A command may wait for Redis (a cluster's slot map takes a few round trips to learn), and
    // its stdout carries only the result: the cache's own log lines are dropped, the outcome is said below.
    const cache = createCacheService(
      { ...this.settings, cacheTimeoutMs: Math.max(this.settings.cacheTimeoutMs, 3000) },
      new QuietLogger('Cache'),
    );
    try {
      const told =
        this.tables === undefined ? await cache.invalidateAll() : await new TableGenerations(cache).bump(this.tables);
      if (told) return;
      say('warning: could not reach Redis; running servers drop their cache within CACHE_EPOCH_POLL_MS instead');
      if (this.tables !== undefined)
        await withDatabase(this.settings, this.databaseUrl, (dataSource) => moveCacheEpoch(dataSource.manager));
    } finally {
      await cache.close();
    }
  }
}

function moveCacheEpoch(db: EntityManager): Promise<unknown> {
  return db.query('UPDATE cache_epoch SET epoch = epoch + 1');
}

/** The command's `--name value` options, strictly: an unknown option is a usage error (exit 2). */
export function options<T extends Record<string, { type: 'string' }>>(
  args: readonly string[],
  spec: T,
): Partial<Record<keyof T, string>> {
  try {
    const parsed = parseArgs({ args: [...args], options: spec, strict: true, allowPositionals: false, tokens: true });
    const seen = new Set<string>();
    for (const token of parsed.tokens) {
      if (token.kind !== 'option') continue;
      if (seen.has(token.name)) throw new CliError(`--${token.name} is given twice; give it once`, 2);
      seen.add(token.name);
    }
    return parsed.values;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(parseArgsProblem(error instanceof Error ? error.message : String(error)), 2);
  }
}

/** Node's parseArgs messages, said in the CLI's own terms (the option, then what is wrong). */
function parseArgsProblem(message: string): string {
  const unknown = /^Unknown option '([^']+)'/.exec(message);
  if (unknown) return `unknown option ${unknown[1]}`;
  const missing = /^Option '(--[\w-]+)[^']*' argument missing/.exec(message);
  if (missing) return `${missing[1]} needs a value`;
  const dashed = /^Option '(--[\w-]+)[^']*' argument is ambiguous/.exec(message);
  if (dashed) return `${dashed[1]} needs a value; a value starting with "-" goes as ${dashed[1]}=<value>`;
  const positional = /^Unexpected argument '([^']*)'/.exec(message);
  if (positional) return `unexpected argument "${positional[1]}": options take the form --name value`;
  return message;
}
