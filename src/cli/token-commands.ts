import { DEFAULT_SESSION_TTL_SECONDS } from '../access-model/sessions.repository.js';
import { CliError, options, type Command } from './command.js';

/* The token commands' options and help; their database work is token-sessions.ts, imported when one runs. */

function positiveInt(value: string | undefined, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
    throw new CliError(`--${name} must be an integer between 1 and ${max}`, 2);
  return Number(value);
}

const MAX_TTL_SECONDS = 30 * 24 * 3600;
const SESSION_OPTIONS = { 'user-id': { type: 'string' }, 'ttl-seconds': { type: 'string' } } as const;

export interface SessionOptions {
  readonly userId: number;
  readonly ttl: number;
}

export interface BootstrapOptions {
  readonly email: string;
  readonly displayName: string | undefined;
}

function sessionOptions(args: readonly string[]): SessionOptions {
  const values = options(args, SESSION_OPTIONS);
  if (values['user-id'] === undefined) throw new CliError('--user-id is required: the id of an active user', 2);
  return {
    userId: positiveInt(values['user-id'], 'user-id', 0, Number.MAX_SAFE_INTEGER),
    ttl: positiveInt(values['ttl-seconds'], 'ttl-seconds', DEFAULT_SESSION_TTL_SECONDS, MAX_TTL_SECONDS),
  };
}

async function bootstrapOptions(args: readonly string[]): Promise<BootstrapOptions> {
  const values = options(args, { email: { type: 'string' }, 'display-name': { type: 'string' } });
  // The API's own email rule (class-validator), loaded only when the command runs.
  const { isEmail } = await import('class-validator');
  const email = values.email?.trim();
  if (email === undefined || email.length > 254 || !isEmail(email, { require_tld: true }))
    throw new CliError('--email must be an email address, e.g. --email a@example.com', 2);
  const displayName = values['display-name']?.trim();
  if (displayName !== undefined && (displayName.length < 1 || displayName.length > 100))
    throw new CliError('--display-name must be 1-100 characters', 2);
  return { email, displayName };
}

export const TOKEN_COMMANDS: Readonly<Record<string, Command>> = {
  'bootstrap-admin': {
    summary: 'create (or reuse) an active super_admin and print a token for a new 12-hour session',
    usage: '--email E [--display-name N]',
    options: [
      ['--email E', 'the account to create, or to reuse and make an active super_admin (required)'],
      ['--display-name N', 'its display name, 1–100 characters (default: the part of the email before @)'],
    ],
    validate: bootstrapOptions,
    async run(settings, databaseUrl, args) {
      const { bootstrapAdmin } = await import('./token-sessions.js');
      return bootstrapAdmin(settings, databaseUrl, await bootstrapOptions(args));
    },
  },
  'issue-token': {
    summary: 'print a token for a new session of an active user (secret mode only)',
    usage: '--user-id N [--ttl-seconds S]',
    options: [
      ['--user-id N', 'the id of an active, not deleted user (required)'],
      [
        '--ttl-seconds S',
        `how long the session lives, 1–${MAX_TTL_SECONDS} seconds (default ${DEFAULT_SESSION_TTL_SECONDS}, 12 hours)`,
      ],
    ],
    validate: sessionOptions,
    async run(settings, databaseUrl, args) {
      const { issueToken } = await import('./token-sessions.js');
      return issueToken(settings, databaseUrl, sessionOptions(args));
    },
  },
  'create-session': {
    summary: 'print the id of a new session of an active user, for tokens minted by an identity provider (their sid)',
    usage: '--user-id N [--ttl-seconds S]',
    options: [
      ['--user-id N', 'the id of an active, not deleted user (required)'],
      [
        '--ttl-seconds S',
        `how long the session lives, 1–${MAX_TTL_SECONDS} seconds (default ${DEFAULT_SESSION_TTL_SECONDS}, 12 hours)`,
      ],
    ],
    validate: sessionOptions,
    async run(settings, databaseUrl, args) {
      const { createSession } = await import('./token-sessions.js');
      return createSession(settings, databaseUrl, sessionOptions(args));
    },
  },
};
