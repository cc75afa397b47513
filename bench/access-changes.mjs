// `npm run bench:access`: the figures of just-in-time access and previews (API.md parts 6.15 and
// 6.17), on a throw-away database with two instances sharing one Redis:
// - approval to first allowed request: an operator's request is approved on instance A; the
//   operator's very next request, on instance B (whose cache held the device's authority set
//   from before), must be allowed. Timed from the approval's response to that answer.
// - expiry to first refused request: an authority with an expiry a moment ahead; B is asked in
//   a loop across the instant, and every answer after it must be a refusal (no cache may serve a
//   right past its expiry). The shortest approval is 300 s (part 6.15), so the expiry measured is
//   the authority's: the same cached set carries both expiries, judged the same way per request.
// - preview cost: PATCH /users/{id} (a role change) previewed and made, alternately; medians.
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { freePort } from './ports.mjs';
import {
  createBenchDatabase,
  flushBenchRedis,
  JWT_SECRET,
  median,
  printTable,
  serviceEnv,
  startChild,
  withClient,
} from './support.mjs';

const ROUNDS = Number(process.env.BENCH_ACCESS_ROUNDS ?? 20);
const log = (line) => process.stderr.write(`[access] ${line}\n`);
const stops = [];

async function user(client, email, roleId) {
  const { rows } = await client.query(
    "INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, 'Bench', $2, 2) RETURNING id",
    [email, roleId],
  );
  const session = (
    await client.query(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '2 hours') RETURNING id, user_id, expires_at",
      [rows[0].id],
    )
  ).rows[0];
  const token = signAccessToken(loadSettings({ DATABASE_URL: 'postgresql://x@127.0.0.1/x', JWT_SECRET }), {
    id: session.id,
    user_id: Number(session.user_id),
    expires_at: session.expires_at,
  });
  return { id: Number(rows[0].id), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } };
}

async function call(baseUrl, who, method, path, body) {
  const response = await fetch(`${baseUrl}/v1/admin${path}`, {
    method,
    headers: who.headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

const database = await createBenchDatabase();
stops.push(() => database.drop());
try {
  await flushBenchRedis();
  const world = await withClient(database.url, async (client) => {
    const root = await user(client, 'root@bench.example', 1);
    const owners = [];
    const operators = [];
    const devices = [];
    const authorities = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const owner = await user(client, `owner${round}@bench.example`, 3);
      const operator = await user(client, `operator${round}@bench.example`, 3);
      const device = (
        await client.query(
          "INSERT INTO devices (serial_number, name, owner_user_id) VALUES ($1, 'Bench', $2) RETURNING id",
          [`BENCH-${round}`, owner.id],
        )
      ).rows[0].id;
      await client.query('INSERT INTO authorities (device_id, user_id, owner) VALUES ($1, $2, true)', [
        device,
        owner.id,
      ]);
      const authority = (
        await client.query('INSERT INTO authorities (device_id, user_id) VALUES ($1, $2) RETURNING id', [
          device,
          operator.id,
        ])
      ).rows[0].id;
      owners.push(owner);
      operators.push(operator);
      devices.push(Number(device));
      authorities.push(Number(authority));
    }
    const target = await user(client, 'target@bench.example', 4);
    return { root, owners, operators, devices, authorities, target };
  });

  const instance = async () => {
    const port = await freePort();
    const env = serviceEnv(database.url, { PORT: String(port), CACHE_KEY_PREFIX: 'bench-access:' });
    const child = await startChild(
      new URL('../dist/src/main.js', import.meta.url).pathname,
      env,
      `http://127.0.0.1:${port}/health/ready`,
    );
    stops.push(() => child.stop());
    return `http://127.0.0.1:${port}`;
  };
  const [a, b] = [await instance(), await instance()];

  log(`approval on A, then the requester's next request on B, ${ROUNDS} rounds…`);
  const approvalMs = [];
  let refusedAfterApproval = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const operator = world.operators[round];
    const path = `/authorities/${world.authorities[round]}/deactivate`;
    // B caches the device's authority set, and refuses: the operator may not deactivate yet.
    const before = await call(b, operator, 'POST', `${path}?dry_run=true`, {});
    if (before.status !== 403) throw new Error(`before approval: ${before.status}`);
    const asked = await call(a, operator, 'POST', '/access-requests', {
      device_id: world.devices[round],
      permission_id: 19, // authorities.deactivate
      reason: 'bench',
      duration_seconds: 3600,
    });
    if (asked.status !== 201) throw new Error(`request: ${asked.status} ${JSON.stringify(asked.body)}`);
    const approved = await call(a, world.owners[round], 'POST', `/access-requests/${asked.body.data.id}/approve`, {});
    if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${JSON.stringify(approved.body)}`);
    const started = performance.now();
    const after = await call(b, operator, 'POST', `${path}?dry_run=true`, {});
    approvalMs.push(performance.now() - started);
    if (after.status !== 200) refusedAfterApproval += 1;
  }

  log(`an expiry on A, B asked in a loop across the instant, ${ROUNDS} rounds…`);
  let allowedPastExpiry = 0;
  const firstRefusedMs = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const owner = world.owners[round];
    const operator = world.operators[round];
    const read = `/authorities/${world.authorities[round]}`;
    // The operator's authority holds authorities.deactivate (approved above) until the authority expires.
    const instant = new Date(Date.now() + 1500);
    const patched = await call(a, owner, 'PATCH', `/authorities/${world.authorities[round]}`, {
      expires_at: instant.toISOString(),
    });
    if (patched.status !== 200) throw new Error(`expiry: ${patched.status} ${JSON.stringify(patched.body)}`);
    for (;;) {
      const sent = Date.now();
      const answer = await call(b, operator, 'POST', `${read}/deactivate?dry_run=true`, {});
      if (answer.status === 200 && sent >= instant.getTime()) allowedPastExpiry += 1;
      if (answer.status === 403) {
        firstRefusedMs.push(sent - instant.getTime());
        break;
      }
      if (answer.status !== 200) throw new Error(`expiry loop: ${answer.status}`);
    }
  }

  log('previews against the writes they preview (PATCH /users/{id}, a role change)…');
  const previewMs = [];
  const writeMs = [];
  for (let n = 0; n < ROUNDS * 3; n += 1) {
    const role = n % 2 === 0 ? 3 : 4;
    for (const dryRun of [true, false]) {
      const started = performance.now();
      const answer = await call(a, world.root, 'PATCH', `/users/${world.target.id}${dryRun ? '?dry_run=true' : ''}`, {
        role_id: role,
      });
      (dryRun ? previewMs : writeMs).push(performance.now() - started);
      if (answer.status !== 200) throw new Error(`role change: ${answer.status}`);
    }
  }

  const round1 = (value) => Math.round(value * 10) / 10;
  printTable([
    {
      figure: 'approval → first request on the other instance',
      value: `${round1(median(approvalMs))} ms median, ${round1(Math.max(...approvalMs))} ms max`,
      check: `${ROUNDS - refusedAfterApproval} of ${ROUNDS} allowed at the first request`,
    },
    {
      figure: 'expiry → first refused request on the other instance',
      value: `${round1(median(firstRefusedMs))} ms median after the instant, ${round1(Math.max(...firstRefusedMs))} max`,
      check: `${allowedPastExpiry} requests sent after the instant were allowed (goal 0)`,
    },
    {
      figure: 'preview vs the write (PATCH /users/{id} role)',
      value: `${round1(median(previewMs))} ms vs ${round1(median(writeMs))} ms (medians of ${writeMs.length})`,
      check: `ratio ${Math.round((median(previewMs) / median(writeMs)) * 100) / 100}`,
    },
  ]);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}
