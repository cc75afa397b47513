import { createHash } from 'node:crypto';
import 'reflect-metadata';
import type { ModuleMetadata } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Server } from 'node:http';
import supertest from 'supertest';
import { createApp } from '../../src/app.factory.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { DeclaredWrites } from './declared-writes.js';
import { loadSettings, type Settings } from '../../src/platform/config/settings.js';
import { TEST_JWT_SECRET, TEST_REDIS_URL, testCachePrefix, testDatabaseUrl } from './test-env.js';
import { actor, type Caller } from './auth.js';
import { WidgetsModule } from './widgets/widgets.module.js';

export interface TestApp {
  readonly app: NestFastifyApplication;
  readonly settings: Settings;
  readonly http: () => supertest.Agent;
  close(): Promise<void>;
}

interface StartOptions {
  /** `null`: the in-process cache; default: the test Redis database. */
  readonly redisUrl?: string | null;
  readonly databaseUrl?: string;
  readonly env?: Record<string, string>;
  readonly imports?: ModuleMetadata['imports'];
  /** Mount the test-only widget routes (default true). */
  readonly widgets?: boolean;
  /** A Redis key prefix of the spec's own (`testCachePrefix('name')`), for specs that drop the whole cache. */
  readonly cachePrefix?: string;
}

/** Boots the real Fastify application (guards, pipes, filters, interceptors) for supertest. */
export async function startApp(options: StartOptions = {}): Promise<TestApp> {
  const databaseUrl = options.databaseUrl ?? testDatabaseUrl();
  const redisUrl = options.redisUrl === undefined ? TEST_REDIS_URL : options.redisUrl;
  const settings = loadSettings({
    DATABASE_URL: databaseUrl,
    ...(redisUrl === null ? {} : { REDIS_URL: redisUrl }),
    // An app on a database of its own caches under a prefix of that database: its rows' ids are
    // the shared database's ids too, and its cached users (a suspended one, say) would otherwise
    // answer for the shared database's users of the same id (a CI run saw another spec's
    // super_admin refused as not active).
    CACHE_KEY_PREFIX:
      options.cachePrefix ??
      (databaseUrl === testDatabaseUrl()
        ? testCachePrefix()
        : testCachePrefix(`db-${createHash('sha1').update(new URL(databaseUrl).pathname).digest('hex').slice(0, 10)}`)),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(options.env?.JWT_JWKS_URL === undefined ? { JWT_SECRET: TEST_JWT_SECRET } : {}),
    // Specs share one address (127.0.0.1) and one Redis; the limiter spec sets its own limit.
    AUTH_FAILURE_LIMIT_PER_MINUTE: '100000',
    // Specs share one database: only the specs about jobs run workers, each on its own queue schema.
    JOB_WORKERS: 'false',
    // Two runs of the suite side by side start up to a dozen apps at once on one PostgreSQL (100
    // connections): each keeps a small pool. The specs about pools and contention set their own.
    DB_POOL_SIZE: '5',
    // Nor do they deliver webhooks (all share the feed's fan-out): the webhook specs do.
    WEBHOOK_WORKERS: 'false',
    // Nor do they follow the shared cache epoch, which the CLI's and the fault specs' writes move:
    // it would drop every other spec's cache mid-test. The specs about the epoch set their own.
    CACHE_EPOCH_POLL_MS: '60000',
    // On a loaded machine (another npm test beside this one) a call to the shared Redis can take
    // longer than production's 50 ms budget, and a read would answer `bypass` where a spec expects
    // `hit`. The specs about the budget and outages run a Redis of their own (or set their own).
    ...(options.redisUrl === undefined ? { CACHE_TIMEOUT_MS: '2000' } : {}),
    // Likewise a write's after-commit work: past its budget the whole cache is dropped, which a
    // spec expecting a hit would see as a miss. The spec about the budget sets its own.
    AFTER_COMMIT_TIMEOUT_MS: '30000',
    ...options.env,
  });
  const imports = [...(options.widgets === false ? [] : [WidgetsModule]), ...(options.imports ?? [])];
  const app = await createApp({ settings, databaseUrl, imports });
  app.get(UnitOfWork).inspect(new DeclaredWrites());
  const server: Server = app.getHttpServer();
  return {
    app,
    settings,
    http: () => supertest.agent(server),
    close: () => app.close(),
  };
}

/**
 * The usual spec setup: one app and a super_admin caller for the enclosing describe block, closed
 * after it. Read `app.t` and `app.root` inside the tests (they are set in `beforeAll`).
 */
export function useApp(options: StartOptions = {}): { readonly t: TestApp; readonly root: Caller } {
  const context = {} as { t: TestApp; root: Caller };
  beforeAll(async () => {
    context.t = await startApp(options);
    context.root = await actor('super_admin');
  });
  afterAll(() => context.t.close());
  return context;
}

/** Makes the app listen on a free loopback port (for raw sockets and fetch); answers the port. */
export async function listening(t: TestApp): Promise<number> {
  await t.app.listen(0, '127.0.0.1');
  const address = t.app.getHttpServer().address();
  if (address === null || typeof address === 'string') throw new Error('the app is not listening on a port');
  return address.port;
}
