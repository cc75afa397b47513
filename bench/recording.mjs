// `npm run bench:recording` (part 6.16): what recording last uses costs the cached read. The same
// service runs with ACCESS_USE_RECORDING on and off, beside the physical baseline (bare node:http
// + HS256 + two plain Redis GETs + the envelope), in alternating 8 s rounds at 50 connections,
// for two readers of one authority: a super_admin (allowed by role, the performance issue's
// figure: nothing to record) and an operator allowed through an authority permission on the
// device (the path whose use is recorded). Prints req/s, p99 and each ratio; writes nothing.
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { freePort } from './ports.mjs';
import {
  benchAdminSession,
  createBenchDatabase,
  flushBenchRedis,
  JWT_SECRET,
  load,
  median,
  printTable,
  serviceEnv,
  startChild,
  storeBareValues,
  withClient,
} from './support.mjs';

const log = (line) => process.stderr.write(`[recording] ${line}\n`);
const seconds = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
const stops = [];

const database = await createBenchDatabase();
stops.push(() => database.drop());
try {
  await flushBenchRedis();
  // An operator with an authority on a device carrying authorities.read: its reads are allowed
  // through that authority permission, a revocable path (a super_admin's role records nothing).
  const { session, authorityId, admin } = await withClient(database.url, async (client) => {
    const user = (
      await client.query(
        "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('reader@example.com', 'Reader', 3, 2) RETURNING id",
      )
    ).rows[0];
    const device = (
      await client.query("INSERT INTO devices (serial_number, name) VALUES ('R-1', 'Recorded') RETURNING id")
    ).rows[0];
    const authority = (
      await client.query('INSERT INTO authorities (device_id, user_id) VALUES ($1, $2) RETURNING id', [
        device.id,
        user.id,
      ])
    ).rows[0];
    await client.query(
      "INSERT INTO authority_permissions (authority_id, permission_id) SELECT $1, id FROM permissions WHERE code = 'authorities.read'",
      [authority.id],
    );
    const created = (
      await client.query(
        "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '2 hours') RETURNING id, user_id, expires_at",
        [user.id],
      )
    ).rows[0];
    return { session: created, authorityId: authority.id, admin: await benchAdminSession(client, 'admin@example.com') };
  });
  const bearer = (of) => ({
    authorization: `Bearer ${signAccessToken(loadSettings({ DATABASE_URL: database.url, JWT_SECRET }), {
      id: of.id,
      user_id: Number(of.user_id),
      expires_at: of.expires_at,
    })}`,
  });
  const readers = { operator: bearer(session), super_admin: bearer(admin) };
  const start = async (recording) => {
    const port = await freePort();
    const child = await startChild(
      new URL('../dist/src/main.js', import.meta.url).pathname,
      serviceEnv(database.url, { PORT: String(port), ACCESS_USE_RECORDING: String(recording) }),
      `http://127.0.0.1:${port}/health/ready`,
    );
    stops.push(() => child.stop());
    return { url: `http://127.0.0.1:${port}/v1/admin/authorities/${authorityId}`, port };
  };
  const on = await start(true);
  const off = await start(false);
  await storeBareValues(`http://127.0.0.1:${on.port}`, readers.operator, session, authorityId);
  await storeBareValues(`http://127.0.0.1:${on.port}`, readers.super_admin, admin, authorityId);
  const basePort = await freePort();
  const base = await startChild(
    new URL('./baselines/detail-server.mjs', import.meta.url).pathname,
    { ...serviceEnv(database.url), PORT: String(basePort) },
    `http://127.0.0.1:${basePort}/health/ready`,
  );
  stops.push(() => base.stop());
  const bare = `http://127.0.0.1:${basePort}/v1/admin/authorities/${authorityId}`;
  const measure = async (url, headers) => {
    const first = await fetch(url, { headers });
    if (first.status !== 200) throw new Error(`${url}: ${first.status} ${await first.text()}`);
    await load(url, { headers, connections: 50, duration: 1 });
    return load(url, { headers, connections: 50, duration: seconds });
  };
  // Each service run is followed by a bare run, and its ratio is to that one: the machine's speed
  // drifts within a minute, and a ratio to a bare run a minute away measures the drift.
  const names = ['super_admin on', 'super_admin off', 'operator on', 'operator off'];
  const runs = Object.fromEntries(names.map((name) => [name, []]));
  const ratios = Object.fromEntries(names.map((name) => [name, []]));
  const bareRuns = [];
  for (let round = 1; round <= rounds; round += 1) {
    // Every other round measures recording off first: no side gains from going first.
    const order = round % 2 === 1 ? names : ['super_admin off', 'super_admin on', 'operator off', 'operator on'];
    for (const name of order) {
      const [reader, recording] = name.split(' ');
      const run = await measure(recording === 'on' ? on.url : off.url, readers[reader]);
      const base = await measure(bare, readers[reader]);
      for (const [what, result] of [
        [name, run],
        ['bare', base],
      ])
        if (result.non2xx > 0) throw new Error(`${what}: ${result.non2xx} answers were not 2xx`);
      runs[name].push(run);
      bareRuns.push(base);
      ratios[name].push(run.rps / base.rps);
      log(`round ${round} ${name}: ${run.rps} req/s (bare ${base.rps}), p99 ${run.p99_ms} ms`);
    }
  }
  printTable([
    ...names.map((name) => ({
      server: `service, ${name.replace(' ', ' read, recording ')}`,
      'req/s (median)': median(runs[name].map((run) => run.rps)),
      'p99 ms (median)': median(runs[name].map((run) => run.p99_ms)),
      'ratio to the bare run after it (median)': Math.round(median(ratios[name]) * 1000) / 1000,
    })),
    {
      server: 'bare node:http baseline',
      'req/s (median)': median(bareRuns.map((run) => run.rps)),
      'p99 ms (median)': median(bareRuns.map((run) => run.p99_ms)),
      'ratio to the bare run after it (median)': 1,
    },
  ]);
  const used = await fetch(`http://127.0.0.1:${on.port}/health/ready`).then((res) => res.json());
  log(`recording stats of the recording instance: ${JSON.stringify(used.data?.access_uses ?? used.access_uses)}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}
