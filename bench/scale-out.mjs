// `npm run bench:scale-out` (API.md part 12): one instance on one Redis and the primary, against
// two instances behind a round-robin proxy on a Redis Cluster (3 masters, 3 replicas) and a
// streaming read replica, all of our own on loopback ports. It measures the cached detail read
// and uncached list pages (LIST_CACHE=false, so every page is a database read: the replica's
// work), then writes on one instance and reads on the other, counting stale answers.
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { migrate } from '../dist/src/platform/database/migrate.js';
import { PrimaryWithReplica } from '../test/support/pg-replica.mjs';
import { startRedisCluster } from '../test/support/redis-cluster.mjs';
import { seedMillion } from './lib/seed.mjs';
import { startRoundRobinProxy } from './lib/round-robin-proxy.mjs';
import { freePort } from './ports.mjs';
import {
  benchAdminSession,
  flushBenchRedis,
  JWT_SECRET,
  load,
  printTable,
  ratio,
  REDIS_URL,
  saveResults,
  serviceEnv,
  startChild,
  withClient,
} from './support.mjs';

const log = (line) => process.stderr.write(`[scale-out] ${line}\n`);
const duration = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const STALE_ROUNDS = Number(process.env.BENCH_STALE_ROUNDS ?? 300);

const stops = [];
try {
  log('starting a Redis Cluster (3 masters, 3 replicas) and a primary with a streaming replica…');
  const [cluster, servers] = await Promise.all([startRedisCluster(), PrimaryWithReplica.start()]);
  stops.push(
    () => cluster.stop(),
    () => servers.stop(),
  );
  await servers.createDatabase('bench');
  const primary = servers.url('bench', 'primary');
  const replica = servers.url('bench', 'replica');
  await migrate(loadSettings({ DATABASE_URL: primary }), primary);
  log('seeding 200 000 authorities…');
  const seeded = await withClient(primary, async (client) => {
    const seed = await seedMillion(client, (line) => log(`  ${line}`), 10_000);
    const session = await benchAdminSession(client, 'scale-admin@example.com');
    const [authority] = (await client.query('SELECT id FROM authorities ORDER BY id LIMIT 1')).rows;
    const [device] = (await client.query('SELECT id FROM devices ORDER BY id LIMIT 1')).rows;
    return { ...seed, session, authorityId: Number(authority.id), deviceId: Number(device.id) };
  });
  await servers.waitForReplica(300_000);
  await flushBenchRedis();
  const token = signAccessToken(loadSettings({ DATABASE_URL: primary, JWT_SECRET }), {
    id: seeded.session.id,
    user_id: Number(seeded.session.user_id),
    expires_at: seeded.session.expires_at,
  });
  const headers = { authorization: `Bearer ${token}` };

  const startInstance = async (overrides) => {
    const port = await freePort();
    const env = serviceEnv(primary, { LIST_CACHE: 'false', DB_POOL_SIZE: '10', ...overrides, PORT: String(port) });
    const child = await startChild(
      new URL('../dist/src/main.js', import.meta.url).pathname,
      env,
      `http://127.0.0.1:${port}/health/ready`,
    );
    stops.push(() => child.stop());
    return { ...child, url: `http://127.0.0.1:${port}`, port };
  };

  const measure = async (label, baseUrl) => {
    const detail = `${baseUrl}/v1/admin/authorities/${seeded.authorityId}`;
    const list = `${baseUrl}/v1/admin/authorities?user_id=${seeded.users[0]}&page=3&page_size=20&sort=id:asc`;
    for (const url of [detail, list]) if ((await fetch(url, { headers })).status !== 200) throw new Error(url);
    await load(detail, { headers, connections: 50, duration: 2 });
    const detailRun = await load(detail, { headers, connections: 50, duration });
    await load(list, { headers, connections: 20, duration: 2 });
    const listRun = await load(list, { headers, connections: 20, duration });
    log(`${label}: detail ${detailRun.rps} req/s, list ${listRun.rps} req/s`);
    return { detailRun, listRun };
  };

  log('one instance, one Redis, the primary only…');
  const single = await startInstance({ REDIS_URL, CACHE_KEY_PREFIX: 'scale-single:' });
  const one = await measure('one instance', single.url);
  await single.stop();
  stops.pop();

  log('two instances behind a round-robin proxy, the cluster and the replica…');
  const scaled = { REDIS_URL: cluster.url, DATABASE_READ_URLS: replica, CACHE_KEY_PREFIX: 'scale-two:' };
  const instances = [await startInstance(scaled), await startInstance(scaled)];
  const proxy = await startRoundRobinProxy(
    instances.map((instance) => ({ host: '127.0.0.1', port: instance.port })),
    await freePort(),
  );
  stops.push(() => proxy.stop());
  const two = await measure('two instances', proxy.url);
  const replicaReads = async () =>
    (
      await Promise.all(
        instances.map(async (instance) => (await (await fetch(`${instance.url}/health/ready`)).json()).data),
      )
    ).reduce((sum, ready) => sum + (ready.read_replicas[0]?.reads ?? 0), 0);

  log(`writing on one instance and reading on the other, ${STALE_ROUNDS} rounds…`);
  const readsBefore = await replicaReads();
  let stale = 0;
  const [writer, reader] = instances;
  for (let round = 1; round <= STALE_ROUNDS; round += 1) {
    const name = `Scale round ${round}`;
    const written = await fetch(`${writer.url}/v1/admin/devices/${seeded.deviceId}`, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    if (written.status !== 200) throw new Error(`PATCH answered ${written.status}`);
    const detail = await (await fetch(`${reader.url}/v1/admin/devices/${seeded.deviceId}`, { headers })).json();
    const listed = await (
      await fetch(`${reader.url}/v1/admin/devices?q=Scale%20round%20${round}&page_size=5`, { headers })
    ).json();
    if (detail.data.name !== name) stale += 1;
    if (!listed.data.some((device) => device.id === seeded.deviceId && device.name === name)) stale += 1;
  }
  const staleReplicaReads = (await replicaReads()) - readsBefore;

  const row = (scenario, metric, service, baseline, notes) => ({
    scenario,
    metric,
    service,
    baseline,
    ratio: ratio(service, baseline),
    goal: '',
    met: '',
    notes,
  });
  const rows = [
    row(
      '10a cached detail read (50 conn)',
      'req/s',
      two.detailRun.rps,
      one.detailRun.rps,
      `two instances (proxy, cluster) vs one (one Redis); p99 ${two.detailRun.p99_ms} vs ${one.detailRun.p99_ms} ms; errors ${two.detailRun.non2xx + two.detailRun.errors}`,
    ),
    row(
      '10b list page, every read a database read (20 conn)',
      'req/s',
      two.listRun.rps,
      one.listRun.rps,
      `two instances reading the replica vs one reading the primary; p99 ${two.listRun.p99_ms} vs ${one.listRun.p99_ms} ms`,
    ),
    {
      scenario: '10c write on one instance, read on the other',
      metric: 'stale answers',
      service: stale,
      baseline: '',
      ratio: '',
      goal: '0',
      met: stale === 0,
      notes: `${STALE_ROUNDS} rounds of PATCH then detail + list on the other instance; ${staleReplicaReads} of the list reads served by the replica`,
    },
  ];
  printTable(rows);
  log(`results in ${saveResults('scale-out', { rows })}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch((error) => log(`cleanup: ${error.message}`));
}
