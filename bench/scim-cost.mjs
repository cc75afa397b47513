// `npm run bench:scim-cost`: what one SCIM create and one `userName eq` lookup cost in CPU, the
// service's and PostgreSQL's (all its processes, from /proc: Linux), two requests at once on a
// throw-away database, so a change to either path shows as time spent, not as a latency that
// also moves with the machine's other load. BENCH_SCIM_COST_N requests of each (default 1 500),
// after 300 of each untimed.
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { freePort } from './ports.mjs';
import {
  benchAdminSession,
  createBenchDatabase,
  flushBenchRedis,
  JWT_SECRET,
  printTable,
  saveResults,
  serviceEnv,
  startChild,
  withClient,
} from './support.mjs';

const N = Number(process.env.BENCH_SCIM_COST_N ?? 1500);
const WARM_UP = 300;
const CONCURRENCY = 2;
const TICK_MS = 1000 / 100; // USER_HZ: /proc counts CPU time in hundredths of a second

/** CPU time of a process so far, in ticks (0 once it is gone). */
function ticks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** A process's command line ('' once it is gone). */
function commandOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** CPU time of every PostgreSQL process (backends, WAL writer, checkpointer), in ticks. */
function postgresTicks() {
  let total = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    if (commandOf(pid).startsWith('postgres')) total += ticks(pid);
  }
  return total;
}

const database = await createBenchDatabase();
try {
  await flushBenchRedis();
  const session = await withClient(database.url, (client) => benchAdminSession(client, 'scim-cost@example.com'));
  const token = signAccessToken(loadSettings({ DATABASE_URL: database.url, JWT_SECRET }), {
    id: session.id,
    user_id: Number(session.user_id),
    expires_at: session.expires_at,
  });
  const port = await freePort();
  const child = await startChild(
    new URL('../dist/src/main.js', import.meta.url).pathname,
    serviceEnv(database.url, { PORT: String(port) }),
    `http://127.0.0.1:${port}/health/ready`,
  );
  try {
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' };
    const call = (method, path, body) =>
      new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const sent = payload === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(payload) };
        const req = request(`http://127.0.0.1:${port}/scim/v2${path}`, { method, agent, headers: sent }, (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode < 300 ? resolve() : reject(new Error(`${method} ${path}: ${res.statusCode}`)),
          );
        });
        req.on('error', reject);
        req.end(payload);
      });
    const pool = async (count, work) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let i = next++; i < count; i = next++) await work(i);
        }),
      );
    };
    const userName = (i) => `cost-${i}@bench.example`;
    const create = (i) =>
      call('POST', '/Users', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: userName(i),
        name: { givenName: 'Bench', familyName: `User ${i}` },
        emails: [{ primary: true, value: userName(i), type: 'work' }],
        externalId: `00c${i}`,
        active: true,
      });
    const lookUp = (i) => call('GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName(i)}"`)}`);
    const measure = async (operation, work) => {
      const service = ticks(child.pid);
      const postgres = postgresTicks();
      const started = performance.now();
      await pool(N, work);
      const seconds = (performance.now() - started) / 1000;
      return {
        operation,
        requests: N,
        'service CPU ms each': Math.round(((ticks(child.pid) - service) * TICK_MS * 100) / N) / 100,
        'PostgreSQL CPU ms each': Math.round(((postgresTicks() - postgres) * TICK_MS * 100) / N) / 100,
        'req/s': Math.round(N / seconds),
      };
    };
    await pool(WARM_UP, (i) => create(N + i));
    await pool(WARM_UP, (i) => lookUp(N + i));
    const rows = [
      await measure('POST /Users (create, active)', create),
      await measure('GET /Users?filter=userName eq', lookUp),
    ];
    printTable(rows);
    const file = saveResults('scim-cost', { concurrency: CONCURRENCY, rows });
    process.stderr.write(`[scim-cost] written to ${file}\n`);
  } finally {
    await child.stop();
  }
} finally {
  await database.drop();
}
