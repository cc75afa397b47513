// `npm run bench:scim-cost`: what one SCIM create and one `userName eq` lookup cost in CPU, the
// service's and PostgreSQL's (all its processes, from /proc: Linux), two requests at once on a
// throw-away database, so a change to either path shows as time spent, not as a latency that
// also moves with the machine's other load. BENCH_SCIM_COST_N requests of each (default 1 500),
// after 300 of each untimed.
import { readdirSync, readFileSync } from 'node:fs';
import { startScimService, scimClient } from './scim-client.mjs';
import { printTable, saveResults } from './support.mjs';

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

const stops = [];
try {
  const service = await startScimService('scim-cost@example.com', stops);
  const { call, pool } = scimClient(service, CONCURRENCY);
  const pid = service.child.pid;
  const userName = (i) => `cost-${i}@bench.example`;
  const user = (i) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: userName(i),
    name: { givenName: 'Bench', familyName: `User ${i}` },
    emails: [{ primary: true, value: userName(i), type: 'work' }],
    externalId: `00c${i}`,
    active: true,
  });
  const create = (i) => call('POST', '/Users', user(i), 201);
  const lookUp = (i) =>
    call('GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName(i)}"`)}`, undefined, 200);
  const measure = async (operation, work) => {
    const serviceTicks = ticks(pid);
    const postgres = postgresTicks();
    const started = performance.now();
    await pool(N, work);
    const seconds = (performance.now() - started) / 1000;
    return {
      operation,
      requests: N,
      'service CPU ms each': Math.round(((ticks(pid) - serviceTicks) * TICK_MS * 100) / N) / 100,
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
  for (const stop of stops.reverse()) await stop();
}
