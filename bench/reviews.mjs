// `npm run bench:reviews` (part 6.16): access-review campaigns at a million authorities, on a
// throw-away database. Times, through the HTTP API and its jobs: the snapshot of a campaign of
// 100 000 items (POST to `open`), a 1000-item decisions call, a page of items at 10 connections,
// and the close of a campaign that revokes 10 000 authority permissions (POST close to `closed`).
// Prints a table; writes nothing.
import { setTimeout as sleep } from 'node:timers/promises';
import { signAccessToken } from '../dist/src/platform/auth/token-signer.js';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { seedMillion } from './lib/seed.mjs';
import { freePort } from './ports.mjs';
import {
  benchAdminSession,
  createBenchDatabase,
  flushBenchRedis,
  JWT_SECRET,
  load,
  printTable,
  serviceEnv,
  startChild,
  withClient,
} from './support.mjs';

const log = (line) => process.stderr.write(`[reviews] ${line}\n`);
const stops = [];
const AUTHORITIES_READ = 13;
const AUTHORITIES_CREATE = 14;

const database = await createBenchDatabase();
stops.push(() => database.drop());
try {
  await flushBenchRedis();
  log('seeding 1 000 000 authorities…');
  const seeded = await withClient(database.url, async (client) => {
    const seed = await seedMillion(client, (line) => log(`  ${line}`));
    // 100 000 delegated rights for the snapshot (two users' authorities), 10 000 for the close.
    await client.query(
      `INSERT INTO authority_permissions (authority_id, permission_id, granted_at)
       SELECT id, $3, now() - interval '200 days' FROM authorities WHERE user_id IN ($1, $2)`,
      [seed.users[0], seed.users[1], AUTHORITIES_READ],
    );
    await client.query(
      `INSERT INTO authority_permissions (authority_id, permission_id, granted_at)
       SELECT id, $2, now() - interval '200 days' FROM authorities WHERE user_id = $1 ORDER BY id LIMIT 10000`,
      [seed.users[2], AUTHORITIES_CREATE],
    );
    await client.query('VACUUM ANALYZE authority_permissions');
    const session = await benchAdminSession(client, 'reviews-admin@example.com');
    return { ...seed, session };
  });
  const token = signAccessToken(loadSettings({ DATABASE_URL: database.url, JWT_SECRET }), {
    id: seeded.session.id,
    user_id: Number(seeded.session.user_id),
    expires_at: seeded.session.expires_at,
  });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const port = await freePort();
  const child = await startChild(
    new URL('../dist/src/main.js', import.meta.url).pathname,
    serviceEnv(database.url, { PORT: String(port), JOB_WORKERS: 'true' }),
    `http://127.0.0.1:${port}/health/ready`,
  );
  stops.push(() => child.stop());
  const api = `http://127.0.0.1:${port}/v1/admin/access-reviews`;
  const call = async (method, url, body) => {
    const res = await fetch(url, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const json = await res.json();
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  const until = async (id, state) => {
    for (;;) {
      const review = await call('GET', `${api}/${id}`);
      if (review.state === state) return review;
      await sleep(50);
    }
  };
  const dueAt = new Date(Date.now() + 14 * 86_400_000).toISOString();
  const rows = [];

  let started = Date.now();
  const big = await call('POST', api, {
    name: 'Snapshot of 100 000',
    scope: { user_ids: [seeded.users[0], seeded.users[1]] },
    default_decision: 'keep',
    due_at: dueAt,
  });
  const opened = await until(big.id, 'open');
  const snapshotMs = Date.now() - started;
  rows.push({ figure: `snapshot of ${opened.counts.items} items (POST to open)`, ms: snapshotMs, goal: '< 60 000' });
  log(`snapshot: ${opened.counts.items} items in ${snapshotMs} ms`);

  const page = [];
  for (let number = 1; number <= 10; number += 1)
    page.push(...(await call('GET', `${api}/${big.id}/items?page=${number}&page_size=100`)));
  started = Date.now();
  const decided = await call('POST', `${api}/${big.id}/decisions`, {
    items: page.map((item, index) => ({ item_id: item.id, decision: index % 2 === 0 ? 'keep' : 'revoke' })),
  });
  rows.push({ figure: `one decisions call of ${decided.accepted} items`, ms: Date.now() - started, goal: '' });

  const items = await load(`${api}/${big.id}/items?page=40&page_size=25`, {
    headers,
    connections: 10,
    duration: Number(process.env.BENCH_DURATION_SECONDS ?? 5),
  });
  rows.push({ figure: 'a page of items, p99 at 10 connections', ms: items.p99_ms, goal: '< 100' });

  const small = await call('POST', api, {
    name: 'Revoke 10 000',
    scope: { user_ids: [seeded.users[2]], permission_codes: ['authorities.create'] },
    default_decision: 'revoke',
    due_at: dueAt,
  });
  const toClose = await until(small.id, 'open');
  started = Date.now();
  await call('POST', `${api}/${small.id}/close`, {});
  const closed = await until(small.id, 'closed');
  const closeMs = Date.now() - started;
  rows.push({
    figure: `close revoking ${closed.result.revoked} of ${toClose.counts.items} items (POST close to closed)`,
    ms: closeMs,
    goal: '',
  });
  log(`close: ${JSON.stringify(closed.result)} in ${closeMs} ms`);
  const [{ n: live }] = await withClient(
    database.url,
    async (client) =>
      (
        await client.query(
          'SELECT count(*)::int AS n FROM authority_permissions WHERE permission_id = $1 AND revoked_at IS NULL',
          [AUTHORITIES_CREATE],
        )
      ).rows,
  );
  if (live !== 0) throw new Error(`${live} authority permissions the close should have revoked are still live`);
  printTable(rows);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}
