// npm run soak: mixed reads and writes for SOAK_SECONDS (default 60) against one instance on a
// database and a redis-server of its own, while Redis is paused and resumed and the app's
// PostgreSQL backends are terminated, twice each. Prints the count of each status, the stale
// reads a checker found (a read after a successful write that shows an older version; must be 0),
// and the server's RSS at start and end. Exits 1 on a stale read or any 5xx other than 503.
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { freePort } from './ports.mjs';
import {
  JWT_SECRET,
  benchAdminSession,
  createBenchDatabase,
  rssMb,
  saveResults,
  serviceEnv,
  startChild,
  withClient,
} from './support.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const WORKERS = 8;
const DEVICES_PER_WORKER = 5;
const APPLICATION = `admin-api-soak-${process.pid}`;
// The server's error and warning lines, for the reason behind any 5xx.
const LOG_FILE = process.env.SOAK_LOG ?? 'bench/results/soak-server.log';

const say = (message) => process.stderr.write(`soak: ${message}\n`);

async function main() {
  const database = await createBenchDatabase();
  const redisPort = await freePort();
  const redis = spawn(
    'redis-server',
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  await sleep(300);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let server;
  try {
    server = await startChild(
      'dist/src/main.js',
      serviceEnv(database.url, {
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        PORT: String(port),
        DB_APPLICATION_NAME: APPLICATION,
        DB_POOL_SIZE: '10',
      }),
      `${base}/health/ready`,
      LOG_FILE,
    );
    const session = await withClient(database.url, (client) => benchAdminSession(client, 'soak@example.com'));
    const token = signAccessToken(loadSettings({ DATABASE_URL: database.url, JWT_SECRET }), session);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const statuses = new Map();
    const count = (status) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    const call = async (method, path, body) => {
      try {
        const response = await fetch(`${base}${path}`, { method, headers, body: body && JSON.stringify(body) });
        count(response.status);
        return { status: response.status, etag: response.headers.get('etag'), body: await response.json() };
      } catch {
        count('connection error');
        return { status: 0 };
      }
    };

    // Each worker owns its devices, so it knows exactly what the last successful write left.
    const owned = [];
    for (let worker = 0; worker < WORKERS; worker += 1) {
      const devices = [];
      for (let index = 0; index < DEVICES_PER_WORKER; index += 1) {
        const created = await call('POST', '/v1/admin/devices', {
          serial_number: `SOAK-${worker}-${index}`,
          name: 'start',
        });
        devices.push({ id: created.body.data.id, version: 1, name: 'start', certain: true });
      }
      owned.push(devices);
    }
    statuses.clear();

    const rssStart = rssMb(server.pid);
    let stale = 0;
    let checked = 0;
    const until = Date.now() + SECONDS * 1000;
    say(`running ${SECONDS} s with ${WORKERS} workers; faults at 20%, 40%, 60% and 80%`);

    const workers = owned.map(async (devices, worker) => {
      for (let step = 0; Date.now() < until; step += 1) {
        const device = devices[step % devices.length];
        const roll = Math.random();
        if (roll < 0.4) {
          const name = `w${worker}-${step}`;
          const written = await call('PATCH', `/v1/admin/devices/${device.id}`, { name });
          if (written.status === 200)
            Object.assign(device, { version: Number(written.etag?.replaceAll('"', '')), name, certain: true });
          // A failed write may or may not have committed: no expectation until the next success.
          else device.certain = false;
        } else if (roll < 0.85) {
          const read = await call('GET', `/v1/admin/devices/${device.id}`);
          if (read.status === 200 && device.certain) {
            checked += 1;
            const version = Number(read.etag?.replaceAll('"', ''));
            if (version < device.version || (version === device.version && read.body.data.name !== device.name)) {
              stale += 1;
              say(
                `stale read of device ${device.id}: version ${version} "${read.body.data.name}", expected ${device.version} "${device.name}"`,
              );
            }
          }
        } else {
          await call('GET', '/v1/admin/devices?page_size=20&sort=id:desc');
        }
      }
    });

    const faults = (async () => {
      const at = (fraction) => sleep(Math.max(0, until - SECONDS * 1000 * (1 - fraction) - Date.now()));
      const pauseRedis = async () => {
        say('pausing Redis for 3 s');
        redis.kill('SIGSTOP');
        await sleep(3000);
        redis.kill('SIGCONT');
        say('Redis resumed');
      };
      const terminateBackends = async () => {
        const ended = await withClient(database.url, (client) =>
          client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
            APPLICATION,
          ]),
        );
        say(`terminated ${ended.rowCount} database backends of the app`);
      };
      await at(0.2);
      await pauseRedis();
      await at(0.4);
      await terminateBackends();
      await at(0.6);
      await pauseRedis();
      await at(0.8);
      await terminateBackends();
    })();

    await Promise.all([...workers, faults]);
    await sleep(1000);
    // The checker: every record as the API reads it now is the row in the database.
    const rows = await withClient(database.url, (client) =>
      client.query('SELECT id, version, name FROM devices WHERE id = ANY($1::bigint[])', [
        owned.flat().map((device) => device.id),
      ]),
    );
    for (const row of rows.rows) {
      const read = await call('GET', `/v1/admin/devices/${row.id}`);
      checked += 1;
      if (Number(read.etag?.replaceAll('"', '')) !== row.version || read.body?.data?.name !== row.name) {
        stale += 1;
        say(
          `after the run, device ${row.id} reads ${read.etag} "${read.body?.data?.name}", the database has ${row.version} "${row.name}"`,
        );
      }
    }
    const rssEnd = rssMb(server.pid);
    const byStatus = Object.fromEntries([...statuses].sort(([a], [b]) => String(a).localeCompare(String(b))));
    const unexpected = [...statuses].filter(
      ([status]) => typeof status === 'number' && status >= 500 && status !== 503,
    );
    const result = {
      seconds: SECONDS,
      requests: [...statuses.values()].reduce((sum, n) => sum + n, 0),
      statuses: byStatus,
      reads_checked: checked,
      stale_reads: stale,
      rss_mib: { start: rssStart, end: rssEnd },
    };
    console.log(JSON.stringify(result, null, 2));
    saveResults('soak', result);
    if (stale > 0 || unexpected.length > 0) process.exitCode = 1;
  } finally {
    await server?.stop();
    redis.kill('SIGKILL');
    await database.drop();
  }
}

await main();
