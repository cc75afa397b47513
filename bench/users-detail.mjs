// Scenario: GET /v1/admin/users/{id} with a valid token, cache hit, 50 connections; the service
// against a bare node:http baseline doing the same work (baselines/users-detail-server.mjs).
// Run with `npm run bench:users` (builds first). Prints requests/s of both and the ratio.
import { freePort } from './ports.mjs';
import { createBenchDatabase, flushBenchRedis, JWT_SECRET, load, printTable, REDIS_URL, saveResults, startChild, withClient } from './support.mjs';
import { signAccessToken } from '../dist/src/auth/token-signer.js';
import { loadSettings } from '../dist/src/config/settings.js';

const DURATION = Number(process.env.BENCH_DURATION_SECONDS ?? 10);
const CONNECTIONS = 50;

const database = await createBenchDatabase();
try {
  await flushBenchRedis();
  const { token, targetId } = await withClient(database.url, async (db) => {
    const admin = (await db.query("INSERT INTO users (email, display_name, role_id, status_id) VALUES ('bench-admin@example.com', 'Bench Admin', 1, 2) RETURNING id")).rows[0];
    const target = (await db.query("INSERT INTO users (email, display_name, role_id, status_id, phone) VALUES ('bench-target@example.com', 'Bench Target', 3, 2, '+14155550100') RETURNING id")).rows[0];
    const session = (await db.query("INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id, user_id, expires_at", [admin.id])).rows[0];
    const settings = loadSettings({ DATABASE_URL: database.url, JWT_SECRET });
    return { token: signAccessToken(settings, { id: session.id, user_id: Number(session.user_id), expires_at: session.expires_at }), targetId: target.id };
  });
  const headers = { authorization: `Bearer ${token}` };
  const env = { DATABASE_URL: database.url, REDIS_URL, JWT_SECRET, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '1000000' };

  const servicePort = await freePort();
  const service = await startChild(new URL('../dist/src/main.js', import.meta.url).pathname, { ...env, PORT: String(servicePort) }, `http://127.0.0.1:${servicePort}/health/ready`);
  const serviceUrl = `http://127.0.0.1:${servicePort}/v1/admin/users/${targetId}`;
  const first = await fetch(serviceUrl, { headers });
  if (first.status !== 200) throw new Error(`service answered ${first.status}: ${await first.text()}`);
  const sample = await (await fetch(serviceUrl, { headers })).json();
  if (sample.meta.cache !== 'hit') throw new Error(`expected a cache hit, got ${sample.meta.cache}`);
  await load(serviceUrl, { headers, connections: CONNECTIONS, duration: 2 });
  const serviceResult = await load(serviceUrl, { headers, connections: CONNECTIONS, duration: DURATION });
  await service.stop();

  const baselinePort = await freePort();
  const baseline = await startChild(new URL('./baselines/users-detail-server.mjs', import.meta.url).pathname, { ...env, PORT: String(baselinePort) }, `http://127.0.0.1:${baselinePort}/health/ready`);
  const baselineUrl = `http://127.0.0.1:${baselinePort}/v1/admin/users/${targetId}`;
  const same = await (await fetch(baselineUrl, { headers })).json();
  if (JSON.stringify(same.data) !== JSON.stringify(sample.data)) throw new Error('the baseline does not send the same resource');
  await load(baselineUrl, { headers, connections: CONNECTIONS, duration: 2 });
  const baselineResult = await load(baselineUrl, { headers, connections: CONNECTIONS, duration: DURATION });
  await baseline.stop();

  const ratio = Math.round((serviceResult.rps / baselineResult.rps) * 1000) / 1000;
  const rows = [
    { scenario: 'GET /users/{id} (cache hit)', side: 'service', ...serviceResult },
    { scenario: 'GET /users/{id} (cache hit)', side: 'baseline', ...baselineResult },
  ];
  printTable(rows);
  console.log(`ratio service/baseline requests/s: ${ratio} (${CONNECTIONS} connections, ${DURATION} s each)`);
  console.log(`results: ${saveResults('users-detail', { connections: CONNECTIONS, duration_seconds: DURATION, ratio, rows })}`);
} finally {
  await database.drop();
}
