import 'reflect-metadata';
import type { Server } from 'node:http';
import { createApp } from './app.factory.js';
import { createPino } from './platform/http/logger.js';
import { withJwtSecret } from './platform/auth/jwt-secret.js';
import { isClusterUrl } from './platform/config/redis-url.js';
import { loadDotEnv } from './platform/config/dotenv.js';
import { loadSettings, SettingsError, type Settings } from './platform/config/settings.js';
import { resolveDatabase } from './platform/database/database-url.js';
import { migrate } from './platform/database/migrate.js';
import { releaseStartUpGarbage } from './platform/config/start-up-memory.js';

function settingsOrExit(): Settings {
  try {
    loadDotEnv();
    return loadSettings();
  } catch (error) {
    if (error instanceof SettingsError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

async function main(): Promise<void> {
  const settings = await withJwtSecret(settingsOrExit()).catch((error: unknown) => {
    if (!(error instanceof SettingsError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  });
  const log = createPino(settings.logLevel, settings.logFormat);
  const database = await resolveDatabase(settings, (line) => log.info(line));
  // The last process to leave an embedded PostgreSQL stops it; saying so when another one stays.
  const leaveDatabase = async (): Promise<void> => {
    if ((await database.embedded?.stopIfUnused()) === false)
      log.info('embedded PostgreSQL left running: another process still uses it');
  };
  let app: Awaited<ReturnType<typeof createApp>> | undefined;
  try {
    const applied = await migrate(settings, database.url);
    log.info(
      { applied },
      applied.length === 0 ? 'database schema is up to date' : `applied ${applied.length} migration(s)`,
    );
    app = await createApp({ settings, databaseUrl: database.url, log });
    releaseStartUpGarbage();
    await app.listen({ port: settings.port, host: settings.host });
  } catch (error) {
    // Do not leave an embedded PostgreSQL behind when start-up fails (e.g. the port is taken).
    // This start's pools are closed first: the fast stop would otherwise cut them with errors.
    await app?.close().catch(() => undefined);
    await leaveDatabase().catch(() => undefined);
    throw error;
  }
  const url = await app.getUrl();
  const ready = {
    url,
    docs: `${url}/docs`,
    database: database.embedded === undefined ? 'external' : 'embedded',
    ...(settings.databaseReadUrls.length === 0 ? {} : { read_replicas: settings.databaseReadUrls.length }),
    cache: settings.redisUrl === undefined ? 'memory' : isClusterUrl(settings.redisUrl) ? 'redis cluster' : 'redis',
  };
  const replicas =
    settings.databaseReadUrls.length === 0 ? '' : ` + ${settings.databaseReadUrls.length} read replica(s)`;
  log.info(
    ready,
    `admin-api ready on ${ready.url} · docs ${ready.docs} · database ${ready.database}${replicas} · cache ${ready.cache}`,
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      log.error({ timeout_ms: settings.shutdownTimeoutMs }, 'shutdown timed out; exiting');
      process.exit(1);
    }, settings.shutdownTimeoutMs);
    force.unref();
    // Keep-alive connections that finish their last request during the shutdown would keep the
    // server open until they time out: close each one as soon as it turns idle.
    const server: Server = app.getHttpServer();
    const closeIdle = setInterval(() => server.closeIdleConnections(), 50);
    closeIdle.unref();
    void (async () => {
      await app.close();
      clearInterval(closeIdle);
      await leaveDatabase();
      log.info('stopped');
      process.exit(0);
    })().catch((error: unknown) => {
      log.error({ err: error }, 'error during shutdown');
      process.exit(1);
    });
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`admin-api failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
