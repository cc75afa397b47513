import { parseArgs } from 'node:util';
import type { Settings } from '../platform/config/settings.js';

/*
 * What the usage text, `--help` and option checks need, and nothing more: this module and the
 * command table are all that `admin-api --help` loads. A command's database work (TypeORM, pg,
 * Nest's cache) is imported inside its run (database.ts).
 */

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
  /** Checks the options before the database is resolved (and an embedded one started); throws `CliError` (or rejects). */
  validate?(args: readonly string[]): unknown;
  /** Imports what it needs itself (`await import(…)`), so that help and option errors load none of it. */
  run(settings: Settings, databaseUrl: string, args: readonly string[]): Promise<number>;
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
