// `npm run bench:recording` (part 6.16): what recording last uses costs the cached read. An
// operator reads an authority it may read through an authority permission on the device (the
// path whose use is recorded); the same service runs with ACCESS_USE_RECORDING on and off, beside
// the physical baseline (bare node:http + HS256 + two plain Redis GETs + the envelope), in
// alternating 8 s rounds at 50 connections. Prints req/s, p99 and each ratio; writes nothing.
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { freePort } from './ports.mjs';
import {
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
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const stops = [];

const database = await createBenchDatabase();
stops.push(() => database.drop());
try {
  await flushBenchRedis();
  // An operator with an authority on a device carrying authorities.read: its reads are allowed
  // through that authority permission, a revocable path (a super_admin's role records nothing).
  const { session, authorityId } = await withClient(database.url, async (client) => {
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
    return { session: created, authorityId: authority.id };
  });
  const token = signAccessToken(loadSettings({ DATABASE_URL: database.url, JWT_SECRET }), {
    id: session.id,
    user_id: Number(session.user_id),
    expires_at: session.expires_at,
  });
  const headers = { authorization: `Bearer ${token}` };
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
  await storeBareValues(`http://127.0.0.1:${on.port}`, headers, session, authorityId);
  const basePort = await freePort();
  const base = await startChild(
    new URL('./baselines/detail-server.mjs', import.meta.url).pathname,
    { ...serviceEnv(database.url), PORT: String(basePort) },
    `http://127.0.0.1:${basePort}/health/ready`,
  );
  stops.push(() => base.stop());
  const bare = `http://127.0.0.1:${basePort}/v1/admin/authorities/${authorityId}`;
  const measure = async (url) => {
    const first = await fetch(url, { headers });
    if (first.status !== 200) throw new Error(`${url}: ${first.status} ${await first.text()}`);
    await load(url, { headers, connections: 50, duration: 1 });
    return load(url, { headers, connections: 50, duration: seconds });
  };
  const runs = { on: [], off: [], bare: [] };
  for (let round = 1; round <= rounds; round += 1) {
    for (const [name, url] of [
      ['on', on.url],
      ['off', off.url],
      ['bare', bare],
    ]) {
      const run = await measure(url);
      if (run.non2xx > 0) throw new Error(`${name}: ${run.non2xx} answers were not 2xx`);
      runs[name].push(run);
      log(`round ${round} ${name}: ${run.rps} req/s, p99 ${run.p99_ms} ms`);
    }
  }
  const used = await fetch(`http://127.0.0.1:${on.port}/health/ready`).then((res) => res.json());
  const ratios = (name) => runs[name].map((run, index) => run.rps / runs.bare[index].rps);
  printTable(
    ['on', 'off', 'bare'].map((name) => ({
      server: name === 'bare' ? 'bare node:http baseline' : `service, recording ${name}`,
      'req/s (median)': median(runs[name].map((run) => run.rps)),
      'p99 ms (median)': median(runs[name].map((run) => run.p99_ms)),
      'ratio to bare (median)': name === 'bare' ? 1 : Math.round(median(ratios(name)) * 1000) / 1000,
    })),
  );
  log(`recording stats of the recording instance: ${JSON.stringify(used.data?.access_uses ?? used.access_uses)}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}
