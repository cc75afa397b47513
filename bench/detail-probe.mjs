// Quick loop for scenario 1 without the million-row seed: a small database, the service and the
// bare baseline (node:http + HS256 + two plain GETs), each loaded in turn; prints req/s, p99 and
// the CPU each process used.
// `node bench/detail-probe.mjs [seconds]` after `npm run build`.
import { readFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { freePort } from './ports.mjs';
import {
  benchAdminSession,
  createBenchDatabase,
  flushBenchRedis,
  JWT_SECRET,
  load,
  rssMb,
  median,
  serviceEnv,
  startChild,
  storeBareValues,
  withClient,
} from './support.mjs';

const seconds = Number(process.argv[2] ?? 5);
const ticks = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
};
const io = (pid) => {
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  return [Number(/syscr: (\d+)/.exec(text)[1]), Number(/syscw: (\d+)/.exec(text)[1])];
};
const redisPid = Number(execSync('pgrep -f "redis-server 127.0.0.1:6379" | head -1').toString().trim() || 0);
const database = await createBenchDatabase();
try {
  await flushBenchRedis();
  const { session, authorityId } = await withClient(database.url, async (client) => {
    const session = await benchAdminSession(client, 'probe@example.com');
    const device = (
      await client.query("INSERT INTO devices (serial_number, name) VALUES ('P-1', 'Probe') RETURNING id")
    ).rows[0];
    const authority = (
      await client.query('INSERT INTO authorities (device_id, user_id, is_active) VALUES ($1, $2, true) RETURNING id', [
        device.id,
        session.user_id,
      ])
    ).rows[0];
    return { session, authorityId: authority.id };
  });
  const settings = loadSettings({ DATABASE_URL: database.url, JWT_SECRET });
  const token = signAccessToken(settings, {
    id: session.id,
    user_id: Number(session.user_id),
    expires_at: session.expires_at,
  });
  const headers = { authorization: `Bearer ${token}` };
  const env = serviceEnv(database.url);
  const measure = async (name, pid, url) => {
    // A pooled keep-alive connection the server closed after the last run fails once: ask again.
    await fetch(url, { headers }).catch(() => fetch(url, { headers }));
    await load(url, { headers, connections: 50, duration: 1 });
    const before = [ticks(pid), redisPid ? ticks(redisPid) : 0, process.cpuUsage(), io(pid)];
    const result = await load(url, { headers, connections: 50, duration: seconds });
    const cpu = process.cpuUsage(before[2]);
    const share = (t) => `${Math.round(t / seconds)}%`;
    const cpuPerRequest = ((ticks(pid) - before[0]) * 10_000) / (result.rps * seconds);
    const redisPerRequest = redisPid ? ((ticks(redisPid) - before[1]) * 10_000) / (result.rps * seconds) : 0;
    const [reads, writes] = io(pid).map((count, index) => (count - before[3][index]) / (result.rps * seconds));
    console.log(
      `${name.padEnd(9)} ${String(result.rps).padStart(6)} req/s p99 ${result.p99_ms} ms non2xx ${result.non2xx} | ${cpuPerRequest.toFixed(0)} µs/req, redis ${redisPerRequest.toFixed(2)} µs/req | cpu server ${share(ticks(pid) - before[0])} redis ${share(redisPid ? ticks(redisPid) - before[1] : 0)} loader ${share((cpu.user + cpu.system) / 10000)} | rss ${rssMb(pid)} MB | syscalls/req r ${reads.toFixed(2)} w ${writes.toFixed(2)}`,
    );
    return result;
  };
  const port = await freePort();
  const service = await startChild(
    new URL('../dist/src/main.js', import.meta.url).pathname,
    { ...env, PORT: String(port), NODE_OPTIONS: process.env.PROBE_NODE_OPTIONS ?? '' },
    `http://127.0.0.1:${port}/health/ready`,
  );
  await storeBareValues(`http://127.0.0.1:${port}`, headers, session, authorityId);
  const basePort = await freePort();
  const base = await startChild(
    new URL('./baselines/detail-server.mjs', import.meta.url).pathname,
    { ...env, PORT: String(basePort) },
    `http://127.0.0.1:${basePort}/health/ready`,
  );
  // Alternating rounds: the machine's speed drifts, so each pair is measured under the same conditions.
  const ratios = [];
  for (let round = 0; round < Number(process.env.PROBE_ROUNDS ?? 3); round += 1) {
    const s = await measure('service', service.pid, `http://127.0.0.1:${port}/v1/admin/authorities/${authorityId}`);
    const b = await measure('baseline', base.pid, `http://127.0.0.1:${basePort}/v1/admin/authorities/${authorityId}`);
    ratios.push(s.rps / b.rps);
  }
  await service.stop();
  await base.stop();
  console.log(`ratios ${ratios.map((r) => r.toFixed(3)).join(' ')}; median ${median(ratios).toFixed(3)}`);
} finally {
  await database.drop();
}
