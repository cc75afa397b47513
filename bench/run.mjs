// `npm run bench`: seeds a million authorities into a throw-away database, starts the service
// against it and Redis, runs every scenario against its baseline in this same run, prints the
// table and writes it as JSON under bench/results/. BENCH_DURATION_SECONDS sets the long runs.
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.mjs';
import { bulkGrant } from './scenarios/bulk.mjs';
import { detailAndMemory } from './scenarios/detail.mjs';
import { lists } from './scenarios/list.mjs';
import { heavyBulk } from './scenarios/heavy-bulk.mjs';
import { stampede } from './scenarios/stampede.mjs';
import { writeThenRead } from './scenarios/write-read.mjs';
import { webhookDelivery } from './scenarios/webhooks.mjs';
import { accessQuestions } from './scenarios/access.mjs';
import { groupsAtScale } from './scenarios/groups.mjs';
import { seedMillion } from './lib/seed.mjs';
import {
  benchAdminSession,
  benchOperatorSession,
  benchGroupMemberSession,
  createBenchDatabase,
  flushBenchRedis,
  JWT_SECRET,
  printTable,
  rssMb,
  saveResults,
  serviceEnv,
  startChild,
  withClient,
} from './support.mjs';

const log = (line) => process.stderr.write(`[bench] ${line}\n`);
const duration = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
// BENCH_SCENARIOS=1,3 runs only those scenarios (by their leading number), for profiling one path.
const only = process.env.BENCH_SCENARIOS?.split(',').map((part) => part.trim());

// The machine's load when the run began: a figure from a busy machine is not a figure.
const loadAtStart = loadavg().map((value) => Math.round(value * 100) / 100);
log(`load average at start: ${loadAtStart.join(' ')}`);
const database = await createBenchDatabase();
let service;
try {
  await flushBenchRedis();
  log('seeding 1 000 000 authorities…');
  const seeded = await withClient(database.url, async (client) => {
    const seed = await seedMillion(client, (line) => log(`  ${line}`));
    const session = await benchAdminSession(client, 'bench-admin@example.com');
    const pick = async (userId, count) =>
      (
        await client.query('SELECT id FROM authorities WHERE user_id = $1 ORDER BY id LIMIT $2', [userId, count])
      ).rows.map((row) => Number(row.id));
    const authorityId = (await pick(seed.users[0], 1))[0];
    return {
      ...seed,
      session,
      operatorSession: await benchOperatorSession(client, 'bench-operator@example.com', authorityId),
      groupMemberSession: await benchGroupMemberSession(client, 'bench-group-member@example.com', authorityId),
      authorityId,
      hotId: (await pick(seed.users[1], 1))[0],
      writeIds: await pick(seed.users[3], 50),
    };
  });
  log(`seeded in ${seeded.seconds} s`);
  const env = serviceEnv(database.url);
  const port = await freePort();
  service = await startChild(
    new URL('../dist/src/main.js', import.meta.url).pathname,
    // BENCH_SERVICE_NODE_OPTIONS=--cpu-prof profiles the service under load (the profile lands in its cwd).
    { ...env, PORT: String(port), NODE_OPTIONS: process.env.BENCH_SERVICE_NODE_OPTIONS ?? '' },
    `http://127.0.0.1:${port}/health/ready`,
  );
  // Idle memory: the service as started, before any load.
  await sleep(2000);
  const idleRssMb = rssMb(service.pid);
  const settings = loadSettings({ DATABASE_URL: database.url, JWT_SECRET });
  const ctx = {
    env,
    duration,
    shortDuration: Math.max(3, Math.round(duration / 2)),
    databaseUrl: database.url,
    serviceUrl: `http://127.0.0.1:${port}`,
    servicePid: service.pid,
    idleRssMb,
    session: seeded.session,
    token: signAccessToken(settings, {
      id: seeded.session.id,
      user_id: Number(seeded.session.user_id),
      expires_at: seeded.session.expires_at,
    }),
    operatorToken: signAccessToken(settings, {
      id: seeded.operatorSession.id,
      user_id: Number(seeded.operatorSession.user_id),
      expires_at: seeded.operatorSession.expires_at,
    }),
    groupMemberToken: signAccessToken(settings, {
      id: seeded.groupMemberSession.id,
      user_id: Number(seeded.groupMemberSession.user_id),
      expires_at: seeded.groupMemberSession.expires_at,
    }),
    authorityId: seeded.authorityId,
    hotId: seeded.hotId,
    holderId: seeded.users[0],
    bulkHolderId: seeded.users[2],
    writeIds: seeded.writeIds,
    writeUserId: seeded.users[3],
    heavyBulkHolders: { service: seeded.users.slice(4, 6), raw: seeded.users.slice(6, 8) },
    accessHolders: seeded.users.slice(10, 13),
    ports: {
      detail: await freePort(),
      list: await freePort(),
      listUncached: await freePort(),
      writeRead: await freePort(),
      heavyBulk: await freePort(),
      webhooks: await freePort(),
      access: await freePort(),
    },
  };
  const rows = [
    {
      scenario: 'seed',
      metric: 's for 1 000 000 authorities',
      service: seeded.seconds,
      baseline: '',
      ratio: '',
      goal: '< 60',
      met: seeded.seconds < 60,
      notes: 'set-based SQL, VACUUM ANALYZE included',
    },
  ];
  for (const [name, scenario] of [
    ['1+6 detail and memory', detailAndMemory],
    ['2 lists', lists],
    ['3 bulk-grant', bulkGrant],
    ['4 write then read', writeThenRead],
    ['5 stampede', stampede],
    ['7 heavy bulk job', heavyBulk],
    ['8 webhooks', webhookDelivery],
    ['9 access questions', accessQuestions],
    ['10 groups at scale', groupsAtScale],
  ]) {
    if (only !== undefined && !only.some((number) => name.split(' ')[0].split('+').includes(number))) continue;
    log(`scenario ${name}…`);
    rows.push(...(await scenario(ctx)));
  }
  printTable(rows.map((row) => ({ ...row, met: row.met ? 'yes' : 'NO' })));
  log(
    `results: ${saveResults(only === undefined ? 'latest' : 'partial', { duration_seconds: duration, load_average: loadAtStart, rows })}`,
  );
} finally {
  await service?.stop();
  await database.drop();
}
