// `npm run bench:findings` (part 6.16): GET /access-findings at a million authorities, each with
// one authority permission (a million revocable paths, a tenth of them used a moment ago), on a
// throw-away database: p99 of a page, unfiltered and by user, device and permission, at 10
// connections. Prints a table; writes nothing.
import { seedMillion } from './lib/seed.mjs';
import {
  benchAdminSession,
  createBenchDatabase,
  flushBenchRedis,
  load,
  printTable,
  sessionToken,
  startService,
  withClient,
} from './support.mjs';

const log = (line) => process.stderr.write(`[findings] ${line}\n`);
const duration = Number(process.env.BENCH_DURATION_SECONDS ?? 8);
const stops = [];

const database = await createBenchDatabase();
stops.push(() => database.drop());
try {
  await flushBenchRedis();
  log('seeding 1 000 000 authorities, one authority permission each…');
  const seeded = await withClient(database.url, async (client) => {
    const seed = await seedMillion(client, (line) => log(`  ${line}`));
    await client.query(
      `INSERT INTO authority_permissions (authority_id, permission_id, granted_at)
       SELECT id, 13, now() - make_interval(secs => id::int % 1000000) FROM authorities`,
    );
    await client.query(
      `INSERT INTO access_path_uses (kind, path_id, last_used_at)
       SELECT 'a', id, now() FROM authority_permissions WHERE id % 10 = 0`,
    );
    // A user as an admin portal has them: 200 authorities on devices of the fleet, each with a right.
    const typical = (
      await client.query(
        "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('typical@example.com', 'Typical', 3, 2) RETURNING id",
      )
    ).rows[0].id;
    await client.query(
      `WITH made AS (INSERT INTO authorities (device_id, user_id)
                     SELECT $2::bigint + n * 249, $1 FROM generate_series(0, 199) n RETURNING id)
       INSERT INTO authority_permissions (authority_id, permission_id, granted_at) SELECT id, 14, now() - interval '1 day' FROM made`,
      [typical, seed.firstDevice],
    );
    await client.query('VACUUM ANALYZE authorities');
    await client.query('VACUUM ANALYZE authority_permissions');
    await client.query('ANALYZE access_path_uses');
    const session = await benchAdminSession(client, 'findings-admin@example.com');
    return { ...seed, session, typical };
  });
  const token = sessionToken(database.url, seeded.session);
  const headers = { authorization: `Bearer ${token}` };
  const { origin } = await startService(database.url, stops);
  const base = `${origin}/v1/admin/access-findings?page_size=20`;
  const rows = [];
  for (const [label, query] of [
    ['unfiltered, page 1', ''],
    ['unfiltered, page 50', '&page=50'],
    ['newest first, page 1', '&sort=granted_at:desc'],
    ['one user (200 paths), page 1', `&user_id=${seeded.typical}`],
    ['one seeded user (50 000 paths), page 1', `&user_id=${seeded.users[3]}`],
    ['one device, page 1', `&device_id=${seeded.firstDevice + 17}`],
    ['one permission, page 1', '&permission_id=13'],
  ]) {
    const url = `${base}${query}`;
    const first = await fetch(url, { headers });
    if (first.status !== 200) throw new Error(`${label}: ${first.status} ${await first.text()}`);
    const run = await load(url, { headers, connections: 10, duration });
    rows.push({
      findings: label,
      'p99 ms': run.p99_ms,
      'p50 ms': run.p50_ms,
      'req/s': run.rps,
      goal: '< 100',
      // No request answered within the run (each one slower than it) is no figure: not met.
      met: run.rps > 0 && run.p99_ms < 100 && run.non2xx === 0 ? 'yes' : 'NO',
    });
    log(`${label}: p99 ${run.p99_ms} ms`);
  }
  printTable(rows);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}
