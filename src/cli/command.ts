import { parseArgs } from 'node:util';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../database/data-source.js';
import { migrate } from '../database/migrate.js';
import type { Settings } from '../config/settings.js';

/** Messages go to stderr so that stdout carries only the command's result (a token, an id). */
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

/** The command's `--name value` options, strictly: an unknown option is a usage error (exit 2). */
export function options<T extends Record<string, { type: 'string' }>>(
  args: readonly string[],
  spec: T,
): Partial<Record<keyof T, string>> {
  try {
    return parseArgs({ args: [...args], options: spec, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new CliError(parseArgsProblem(error instanceof Error ? error.message : String(error)), 2);
  }
}

/** Node's parseArgs messages, said in the CLI's own terms (the option, then what is wrong). */
function parseArgsProblem(message: string): string {
  const unknown = /^Unknown option '([^']+)'/.exec(message);
  if (unknown) return `unknown option ${unknown[1]}`;
  const missing = /^Option '(--[\w-]+)[^']*' argument missing/.exec(message);
  if (missing) return `${missing[1]} needs a value`;
  const positional = /^Unexpected argument '([^']*)'/.exec(message);
  if (positional) return `unexpected argument "${positional[1]}": options take the form --name value`;
  return message;
}
