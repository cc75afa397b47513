// Shared plumbing of the benchmarks: a throw-away database, child servers, autocannon runs.
// Plain ESM over the compiled dist/ (run `nest build` first; the npm scripts do).
import { createClient } from '@keyv/redis';
import autocannon from 'autocannon';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { migrate } from '../dist/src/platform/database/migrate.js';
import { freePort } from './ports.mjs';

export const SERVER_URL =
  process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
// Redis database 14 belongs to the benchmarks: it is flushed at the start of every run.
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/14';
export const JWT_SECRET = 'bench-secret-0123456789abcdef0123456789abcdef';

export async function withClient(url, work) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Creates and migrates admin_api_bench_<time>_<pid>; returns its URL and a drop function. */
export async function createBenchDatabase() {
  const name = `admin_api_bench_${Date.now()}_${process.pid}`;
  await withClient(SERVER_URL, (admin) => admin.query(`CREATE DATABASE ${name}`));
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  await migrate(loadSettings({ DATABASE_URL: url.toString() }), url.toString());
  const drop = () => withClient(SERVER_URL, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return { url: url.toString(), drop };
}

/** A super_admin with a two-hour session, inserted directly: the caller the benchmarks authenticate as. */
export async function benchAdminSession(client, email) {
  const admin = (
    await client.query(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Bench Admin', 1, 2) RETURNING id",
      [email],
    )
  ).rows[0];
  return (
    await client.query(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '2 hours') RETURNING id, user_id, expires_at",
      [admin.id],
    )
  ).rows[0];
}

/**
 * An operator (role 3) with a two-hour session whose only way to read authorities on the device of
 * `authorityId` is its own authority there holding the authority permission `authorities.read`
 * (layer 3c): the portal's everyday caller. Inserted directly, as the admin is.
 */
export async function benchOperatorSession(client, email, authorityId) {
  const operator = (
    await client.query(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Bench Operator', 3, 2) RETURNING id",
      [email],
    )
  ).rows[0];
  const own = (
    await client.query(
      'INSERT INTO authorities (device_id, user_id, is_active) SELECT device_id, $2, true FROM authorities WHERE id = $1 RETURNING id',
      [authorityId, operator.id],
    )
  ).rows[0];
  await client.query(
    "INSERT INTO authority_permissions (authority_id, permission_id) SELECT $1, id FROM permissions WHERE code = 'authorities.read'",
    [own.id],
  );
  return (
    await client.query(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '2 hours') RETURNING id, user_id, expires_at",
      [operator.id],
    )
  ).rows[0];
}

/**
 * A user allowed on the authority's device only through a group: an operator in 20 groups (18
 * directly, and through a chain of 3: g1 ⊂ g19 ⊂ g20), where g20 holds an authority on the device
 * with `authorities.read` (issue 40's first speed row).
 */
export async function benchGroupMemberSession(client, email, authorityId) {
  const member = (
    await client.query(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Bench Group Member', 3, 2) RETURNING id",
      [email],
    )
  ).rows[0];
  const groups = (
    await client.query(
      "INSERT INTO groups (name) SELECT 'bench group ' || g FROM generate_series(1, 20) g ORDER BY g RETURNING id",
    )
  ).rows.map((row) => Number(row.id));
  await client.query('INSERT INTO group_memberships (group_id, user_id) SELECT unnest($1::bigint[]), $2', [
    groups.slice(0, 18),
    member.id,
  ]);
  await client.query('INSERT INTO group_memberships (group_id, member_group_id) VALUES ($1, $2), ($3, $1)', [
    groups[18],
    groups[0],
    groups[19],
  ]);
  const team = (
    await client.query(
      'INSERT INTO authorities (device_id, group_id, is_active) SELECT device_id, $2, true FROM authorities WHERE id = $1 RETURNING id',
      [authorityId, groups[19]],
    )
  ).rows[0];
  await client.query(
    "INSERT INTO authority_permissions (authority_id, permission_id) SELECT $1, id FROM permissions WHERE code = 'authorities.read'",
    [team.id],
  );
  return (
    await client.query(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '2 hours') RETURNING id, user_id, expires_at",
      [member.id],
    )
  ).rows[0];
}

export async function flushBenchRedis() {
  const redis = createClient({ url: REDIS_URL });
  await redis.connect();
  await redis.flushDb();
  await redis.close();
}

/** The settings every benchmarked instance runs with: no rate limit to hit, no job workers. */
export function serviceEnv(databaseUrl, overrides = {}) {
  return {
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    JWT_SECRET,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000',
    JOB_WORKERS: 'false',
    DB_POOL_SIZE: '20',
    ...overrides,
  };
}

/** The service's own V8 flags (npm start, the image's CMD): benchmarks run it as it ships. */
/** The bearer token of a bench session (`benchAdminSession` and its kin), as the service on `databaseUrl` verifies it. */
export function sessionToken(databaseUrl, session) {
  return signAccessToken(loadSettings({ DATABASE_URL: databaseUrl, JWT_SECRET }), {
    id: session.id,
    user_id: Number(session.user_id),
    expires_at: session.expires_at,
  });
}

/** The built service on `databaseUrl` at a free port, ready; `stops` gets what stops it. Answers its child and origin. */
export async function startService(databaseUrl, stops) {
  const port = await freePort();
  const child = await startChild(
    new URL('../dist/src/main.js', import.meta.url).pathname,
    serviceEnv(databaseUrl, { PORT: String(port) }),
    `http://127.0.0.1:${port}/health/ready`,
  );
  stops.push(() => child.stop());
  return { child, origin: `http://127.0.0.1:${port}` };
}

export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=8', '--expose-gc'];

/** Starts `node <script>` with env (its log lines into `logFile` if given) and waits until `readyUrl` answers 200. */
export async function startChild(script, env, readyUrl, logFile) {
  // BENCH_SERVICE_FLAGS replaces the service's flags for an experiment (space-separated).
  const serviceFlags = process.env.BENCH_SERVICE_FLAGS?.split(' ').filter(Boolean) ?? SERVICE_NODE_FLAGS;
  const flags = script.endsWith('/dist/src/main.js') ? serviceFlags : [];
  const child = spawn(process.execPath, [...flags, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', logFile === undefined ? 'ignore' : openSync(logFile, 'w'), 'pipe'],
  });
  let errors = '';
  child.stderr.on('data', (chunk) => (errors += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (let attempt = 0; attempt < 300; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`${script} exited: ${errors}`);
    try {
      if ((await fetch(readyUrl)).status === 200) break;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  return {
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * The load generator: `BENCH_LOAD=wrk` (Debian's wrk, in C, on its own thread) for the timed runs,
 * else autocannon in this process. On 2 cores autocannon's own JavaScript competes with the server
 * it measures (and tops out near 20 000 req/s here), which squeezes every ratio towards 1: wrk
 * leaves the servers the CPU, as a real client would.
 */
const LOADER = process.env.BENCH_LOAD === 'wrk' ? 'wrk' : 'autocannon';
export const loadGenerator = () => LOADER;

/** A timed wrk run: requests/s, p50/p99 (ms), non-2xx answers and socket errors. */
function wrk(url, { headers, connections, duration, timeout }) {
  const args = ['-t1', `-c${connections}`, `-d${duration}s`, '--latency'];
  // wrk gives up on a request after 2 s by default (counted as an error, not in the latency).
  if (timeout !== undefined) args.push('--timeout', `${timeout}s`);
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  const run = spawnSync('wrk', [...args, url], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`wrk failed: ${run.stderr || run.error}`);
  const out = run.stdout;
  const number = (pattern) => Number(pattern.exec(out)?.[1] ?? 0);
  const ms = (pattern) => {
    const match = pattern.exec(out);
    if (match === null) return 0;
    const factor = { us: 0.001, ms: 1, s: 1000 }[match[2]] ?? 1;
    return Math.round(Number(match[1]) * factor * 100) / 100;
  };
  const errors = [...out.matchAll(/(connect|read|write|timeout) (\d+)/g)].reduce((sum, m) => sum + Number(m[2]), 0);
  const requests = number(/(\d+) requests in/);
  return {
    rps: Math.round(number(/Requests\/sec:\s+([\d.]+)/)),
    p50_ms: ms(/50%\s+([\d.]+)(us|ms|s)/),
    p99_ms: ms(/99%\s+([\d.]+)(us|ms|s)/),
    non2xx: number(/Non-2xx or 3xx responses: (\d+)/),
    errors,
    requests,
  };
}

/**
 * One run for `duration` seconds (wrk or autocannon, see LOADER), or exactly `amount` requests
 * (autocannon); returns requests/s and latency percentiles, and counts non-2xx answers.
 */
export function load(url, { headers = {}, connections = 50, duration = 10, amount, timeout } = {}) {
  if (LOADER === 'wrk' && amount === undefined)
    return Promise.resolve(wrk(url, { headers, connections, duration, timeout }));
  return new Promise((resolve, reject) => {
    autocannon(
      { url, headers, connections, ...(amount === undefined ? { duration } : { amount }) },
      (error, result) => {
        if (error) reject(error);
        else
          resolve({
            rps: Math.round(result.requests.average),
            p50_ms: result.latency.p50,
            p99_ms: result.latency.p99,
            non2xx: result.non2xx,
            errors: result.errors,
            requests: result.requests.total,
          });
      },
    );
  });
}

export function printTable(rows) {
  console.table(rows);
}

/** Writes the results as JSON under bench/results/. */
export function saveResults(name, results) {
  const dir = new URL('./results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`${name}.json`, dir);
  writeFileSync(
    file,
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, ...results }, null, 2)}\n`,
  );
  return file.pathname;
}

/** Resident memory of a process, in MB (Linux). */
export function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Percentile of a list of numbers (ms). */
export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

export const ratio = (service, baseline) => Math.round((service / baseline) * 1000) / 1000;

/** The median of a list of numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The Redis server's own CPU seconds so far (`used_cpu_user + used_cpu_sys` of INFO cpu). */
export async function redisCpuSeconds(redis) {
  const info = await redis.info('cpu');
  const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return field('used_cpu_user') + field('used_cpu_sys');
}

/**
 * Stores what the bare detail baseline reads (bench/baselines/detail-server.mjs) with two plain
 * SETs: the session, and the authority as the service sends it (its ETag version and its data).
 * Answers the service's body, for the check that both send the same resource.
 */
export async function storeBareValues(serviceUrl, headers, session, authorityId) {
  const response = await fetch(`${serviceUrl}/v1/admin/authorities/${authorityId}`, { headers });
  const body = await response.json();
  if (response.status !== 200) throw new Error(`the service answered ${response.status}: ${JSON.stringify(body)}`);
  const redis = createClient({ url: REDIS_URL });
  await redis.connect();
  try {
    await redis.set(
      `bare:session:${session.id}`,
      JSON.stringify({ user_id: Number(session.user_id), expires_at: session.expires_at, revoked: false }),
    );
    await redis.set(
      `bare:authority:${authorityId}`,
      `${response.headers.get('etag')?.replaceAll('"', '')}|${JSON.stringify(body.data)}`,
    );
  } finally {
    await redis.close();
  }
  return body;
}
