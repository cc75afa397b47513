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
  /** Checks the options before the database is resolved (and an embedded one started); throws `CliError`. */
  validate?(args: readonly string[]): void;
  run(settings: Settings, databaseUrl: string, args: readonly string[]): Promise<number>;
}
