import { availableParallelism } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isClusterUrl, parseClusterUrl } from './redis-url.js';

/** Thrown for the first invalid setting; its message is the one line printed at start-up. */
export class SettingsError extends Error {
  constructor(
    readonly setting: string,
    problem: string,
  ) {
    super(`Invalid setting ${setting}: ${problem}`);
    this.name = 'SettingsError';
  }
}

export type PushProvider = 'log' | 'fcm';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
/** `auto`: readable lines on a terminal, JSON otherwise (a file, a pipe, a log collector). */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** Every knob the service reads, parsed and validated once (part 11 of the contract). */
/**
 * How many live authorities a user's auth context carries by default (`AUTH_CONTEXT_AUTHORITIES`;
 * about 250 bytes each in the cached entry): an operator acting on its devices is then decided from
 * the context it read with its session, in the same round trip. A user holding more is decided from
 * each device's cached authority set, one more round trip per device-scoped request.
 */
export const DEFAULT_AUTH_CONTEXT_AUTHORITIES = 32;

export interface Settings {
  readonly port: number;
  readonly host: string;
  /** Unset means: run the embedded PostgreSQL under `dataDir`. */
  readonly databaseUrl: string | undefined;
  /** Read replicas of DATABASE_URL: cache misses of details and lists may read from one that has caught up. */
  readonly databaseReadUrls: readonly string[];
  /** Unset means: use the in-process cache. */
  readonly redisUrl: string | undefined;
  /** Every Redis key of the service starts with it: deployments (or test runs) sharing a Redis stay apart. */
  readonly cacheKeyPrefix: string;
  readonly jwtSecret: string | undefined;
  readonly jwtJwksUrl: string | undefined;
  readonly jwtIssuer: string;
  readonly jwtAudience: string;
  readonly cacheTtlSeconds: number;
  /**
   * How many live authorities a user's cached auth context carries at most (0: none, every device
   * check reads the device's authority set).
   */
  readonly authContextAuthorities: number;
  /** Whether list pages go through the cache (false: always the database, `meta.cache: "bypass"`). */
  readonly listCache: boolean;
  readonly rateLimitPerMinute: number;
  /** Proxies in front of the service whose X-Forwarded-For entries are trusted (0: use the socket address). */
  readonly trustProxyHops: number;
  /** Failed authentications one client address may make per minute before it gets 429s. */
  readonly authFailureLimitPerMinute: number;
  readonly pushProvider: PushProvider;
  readonly fcmEndpoint: string | undefined;
  readonly fcmCredentials: string | undefined;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** Where embedded-mode state lives (PostgreSQL data, generated secrets). */
  readonly dataDir: string;
  readonly embeddedPostgresPort: number | undefined;
  readonly dbPoolSize: number;
  /** `application_name` of the service's PostgreSQL connections (the job queue's get `-jobs`). */
  readonly dbApplicationName: string;
  readonly dbConnectTimeoutMs: number;
  /** Write transactions one instance runs at once; more wait their turn (`WriteTurns`). */
  readonly dbWriteConcurrency: number;
  /** How long a write waits for its turn before 503 `busy`. */
  readonly dbWriteWaitMs: number;
  readonly dbStatementTimeoutMs: number;
  readonly cacheTimeoutMs: number;
  /** How long a write's response waits for its after-commit work (cache rebuilds and their re-reads). */
  readonly afterCommitTimeoutMs: number;
  /** How often each instance checks the database's cache epoch (dropped entries other instances could not reach Redis to drop). */
  readonly cacheEpochPollMs: number;
  readonly shutdownTimeoutMs: number;
  /** PostgreSQL schema of the job queue (pg-boss). */
  readonly jobsSchema: string;
  /** Days an event stays in the feed (EVENT_RETENTION_DAYS, part 6.12). */
  readonly eventRetentionDays: number;
  /** Whether this instance runs job workers (false: it only enqueues, e.g. an API-only node). */
  readonly jobWorkers: boolean;
  /** Webhook URLs may name loopback and private addresses (WEBHOOK_ALLOW_PRIVATE, local use only). */
  readonly webhookAllowPrivate: boolean;
  /** Browser origins allowed to call the API (CORS_ORIGINS, exact origins; none by default). */
  readonly corsOrigins: readonly string[];
  /** Webhook URLs may be plain http (WEBHOOK_ALLOW_HTTP, local use only). */
  readonly webhookAllowHttp: boolean;
  /** Whether this instance's job workers also fan events out to webhooks and deliver them (WEBHOOK_WORKERS). */
  readonly webhookWorkers: boolean;
  /** Endpoints one instance delivers to at once (WEBHOOK_CONCURRENCY). */
  readonly webhookConcurrency: number;
  /** Hours a pending access request waits for a decision before it expires (ACCESS_REQUEST_PENDING_HOURS, part 6.15). */
  readonly accessRequestPendingHours: number;
  /** The longest access a request may ask for, in seconds (ACCESS_REQUEST_MAX_SECONDS, part 6.15). */
  readonly accessRequestMaxSeconds: number;
  /** Whether the guard records the last use of grants and authority permissions (ACCESS_USE_RECORDING, part 6.16). */
  readonly accessUseRecording: boolean;
  /** Days without use after which a revocable path is a finding (UNUSED_ACCESS_DAYS, part 6.16). */
  readonly unusedAccessDays: number;
  /** The own role of every user SCIM provisions (SCIM_DEFAULT_ROLE_ID, part 6.19): roles come from groups. */
  readonly scimDefaultRoleId: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/** `.data` at the project root: this file is src/config/settings.ts, compiled to dist/src/config/settings.js. */
const PROJECT_DATA_DIR = fileURLToPath(
  new URL(import.meta.url.includes('/dist/src/') ? '../../../../.data' : '../../../.data', import.meta.url),
);

function text(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new SettingsError(name, `"${raw}" is not an integer`);
  const value = Number(raw);
  if (value < min || value > max) throw new SettingsError(name, `${value} is outside ${min}..${max}`);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  const match = allowed.find((candidate) => candidate === raw.toLowerCase());
  if (match === undefined) throw new SettingsError(name, `"${raw}" is not one of ${allowed.join(', ')}`);
  return match;
}

function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new SettingsError(name, 'is not a valid URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new SettingsError(name, `must use one of ${protocols.join(', ')}`);
  }
  return raw;
}

function identifier(env: Env, name: string, fallback: string): string {
  const raw = text(env, name) ?? fallback;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(raw))
    throw new SettingsError(name, `"${raw}" is not a lower-case SQL identifier`);
  return raw;
}

/**
 * CORS_ORIGINS: comma-separated exact origins (`https://portal.example.com`, a port if not the
 * scheme's). An origin is compared as the browser sends it, so anything that is not exactly an
 * origin (a path, a trailing slash, `*`) is refused at start rather than silently never matching.
 */
function origins(env: Env): readonly string[] {
  const raw = text(env, 'CORS_ORIGINS');
  if (raw === undefined) return [];
  const list = raw.split(',').map((item) => item.trim());
  for (const item of list) {
    let origin: string | undefined;
    try {
      origin = new URL(item).origin;
    } catch {
      origin = undefined;
    }
    if (origin !== item || !/^https?:$/.test(new URL(item).protocol))
      throw new SettingsError('CORS_ORIGINS', `"${item}" is not an origin (scheme://host[:port], no path)`);
  }
  return Object.freeze(list);
}

/** DATABASE_READ_URLS: comma-separated PostgreSQL URLs of streaming replicas (none by default). */
function readUrls(env: Env): readonly string[] {
  const raw = text(env, 'DATABASE_READ_URLS');
  if (raw === undefined) return [];
  const urls = raw.split(',').map((item) => item.trim());
  for (const item of urls) {
    if (item === '') throw new SettingsError('DATABASE_READ_URLS', 'has an empty entry');
    url({ DATABASE_READ_URLS: item }, 'DATABASE_READ_URLS', ['postgres:', 'postgresql:']);
  }
  return Object.freeze(urls);
}

/** One server (`redis://`), or a cluster named by some of its nodes (`redis+cluster://h:p,h:p`). */
function redisUrl(env: Env): string | undefined {
  const raw = text(env, 'REDIS_URL');
  if (raw === undefined || !isClusterUrl(raw)) return url(env, 'REDIS_URL', ['redis:', 'rediss:']);
  if (parseClusterUrl(raw) === undefined)
    throw new SettingsError(
      'REDIS_URL',
      'must list cluster nodes as redis+cluster://[user:password@]host:port,host:port',
    );
  return raw;
}

function keyPrefix(env: Env, name: string, fallback: string): string {
  const raw = text(env, name) ?? fallback;
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(raw))
    throw new SettingsError(name, `"${raw}" must be 1-64 characters of A-Z a-z 0-9 . _ : -`);
  return raw;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingsError(name, `"${raw}" is not true or false`);
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Parses and validates the environment; throws `SettingsError` naming the first bad setting. */
export function loadSettings(env: Env = process.env): Settings {
  const jwtSecret = text(env, 'JWT_SECRET');
  const jwtJwksUrl = url(env, 'JWT_JWKS_URL', ['http:', 'https:']);
  if (jwtSecret !== undefined && jwtSecret.length < 32) {
    throw new SettingsError('JWT_SECRET', 'must be at least 32 characters');
  }
  if (jwtSecret !== undefined && jwtJwksUrl !== undefined) {
    throw new SettingsError('JWT_JWKS_URL', 'cannot be combined with JWT_SECRET; choose one verification mode');
  }
  const pushProvider = oneOf<PushProvider>(env, 'PUSH_PROVIDER', ['log', 'fcm'], 'log');
  const dbPoolSize = integer(env, 'DB_POOL_SIZE', 10, 1, 500);
  const fcmEndpoint = url(env, 'FCM_ENDPOINT', ['http:', 'https:']);
  const fcmCredentials = text(env, 'FCM_CREDENTIALS');
  if (pushProvider === 'fcm' && fcmCredentials === undefined) {
    throw new SettingsError('FCM_CREDENTIALS', 'is required when PUSH_PROVIDER is fcm');
  }
  // The default is the project's own `.data`, wherever the command runs from (`npx admin-api` finds
  // the project from any subdirectory); a relative DATA_DIR is relative to the working directory.
  const dataDir = text(env, 'DATA_DIR') ?? PROJECT_DATA_DIR;
  return Object.freeze({
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: text(env, 'HOST') ?? '127.0.0.1',
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseReadUrls: readUrls(env),
    redisUrl: redisUrl(env),
    cacheKeyPrefix: keyPrefix(env, 'CACHE_KEY_PREFIX', 'admin-api:'),
    jwtSecret,
    jwtJwksUrl,
    jwtIssuer: text(env, 'JWT_ISSUER') ?? 'admin-api',
    jwtAudience: text(env, 'JWT_AUDIENCE') ?? 'admin-portal',
    cacheTtlSeconds: integer(env, 'CACHE_TTL_SECONDS', 300, 1, 86_400),
    authContextAuthorities: integer(env, 'AUTH_CONTEXT_AUTHORITIES', DEFAULT_AUTH_CONTEXT_AUTHORITIES, 0, 256),
    listCache: flag(env, 'LIST_CACHE', true),
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 1200, 1, 1_000_000),
    authFailureLimitPerMinute: integer(env, 'AUTH_FAILURE_LIMIT_PER_MINUTE', 30, 1, 1_000_000),
    trustProxyHops: integer(env, 'TRUST_PROXY_HOPS', 0, 0, 10),
    pushProvider,
    fcmEndpoint: fcmEndpoint ?? 'https://fcm.googleapis.com',
    fcmCredentials,
    logLevel: oneOf<LogLevel>(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: oneOf<LogFormat>(env, 'LOG_FORMAT', ['auto', 'json', 'pretty'], 'auto'),
    dataDir: isAbsolute(dataDir) ? dataDir : resolve(process.cwd(), dataDir),
    // Unset: the port chosen when the data directory was made (kept in DATA_DIR/postgres.port).
    embeddedPostgresPort:
      env.EMBEDDED_POSTGRES_PORT === undefined ? undefined : integer(env, 'EMBEDDED_POSTGRES_PORT', 54329, 1024, 65535),
    dbPoolSize,
    dbApplicationName: text(env, 'DB_APPLICATION_NAME') ?? 'admin-api',
    dbConnectTimeoutMs: integer(env, 'DB_CONNECT_TIMEOUT_MS', 2000, 100, 60_000),
    // Two per core: fewer left the cores idle between a write's round trips (50 connections of
    // PATCH then GET: 0.80 of bare SQL without turns, 0.69 at two per core, 0.56 at one); more
    // mostly lengthen the queue reads wait in (WriteTurns). Two connections of the pool stay
    // free of writes, so that stuck writes never leave the reads without one.
    dbWriteConcurrency: integer(
      env,
      'DB_WRITE_CONCURRENCY',
      Math.min(2 * availableParallelism(), Math.max(1, dbPoolSize - 2)),
      1,
      500,
    ),
    // As long as a statement may wait for a lock: writes queued behind a hot row wait as they did in PostgreSQL.
    dbWriteWaitMs: integer(env, 'DB_WRITE_WAIT_MS', 10_000, 100, 600_000),
    dbStatementTimeoutMs: integer(env, 'DB_STATEMENT_TIMEOUT_MS', 10_000, 100, 600_000),
    cacheTimeoutMs: integer(env, 'CACHE_TIMEOUT_MS', 50, 5, 5000),
    afterCommitTimeoutMs: integer(env, 'AFTER_COMMIT_TIMEOUT_MS', 1000, 10, 60_000),
    cacheEpochPollMs: integer(env, 'CACHE_EPOCH_POLL_MS', 1000, 50, 60_000),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000),
    jobsSchema: identifier(env, 'JOBS_SCHEMA', 'pgboss'),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    jobWorkers: flag(env, 'JOB_WORKERS', true),
    webhookAllowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    corsOrigins: origins(env),
    webhookAllowHttp: flag(env, 'WEBHOOK_ALLOW_HTTP', false),
    webhookWorkers: flag(env, 'WEBHOOK_WORKERS', true),
    webhookConcurrency: integer(env, 'WEBHOOK_CONCURRENCY', 8, 1, 256),
    accessRequestPendingHours: integer(env, 'ACCESS_REQUEST_PENDING_HOURS', 72, 1, 8760),
    // A request asks for at least 300 seconds (part 6.15), so the longest may not be shorter.
    accessRequestMaxSeconds: integer(env, 'ACCESS_REQUEST_MAX_SECONDS', 2_592_000, 300, 31_536_000),
    accessUseRecording: flag(env, 'ACCESS_USE_RECORDING', true),
    unusedAccessDays: integer(env, 'UNUSED_ACCESS_DAYS', 90, 1, 3650),
    // The seeded roles are 1–5 (part 5): a provisioned user's own role is one of them.
    scimDefaultRoleId: integer(env, 'SCIM_DEFAULT_ROLE_ID', 5, 1, 5),
  });
}

/** Nest injection token for the settings object. */
export const SETTINGS = Symbol('SETTINGS');
