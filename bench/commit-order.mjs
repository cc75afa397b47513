// `node bench/commit-order.mjs`: what the feed's commit order costs. Transactions that each write
// one event, from 1, 8 and 32 connections, for 4 s each, against the same row written into a table
// without the feed's triggers. Each event-writing transaction takes its feed position under one
// lock as it commits, so such commits are serialised; this measures the ceiling that sets.
import pg from 'pg';
import { loadSettings } from '../dist/src/platform/config/settings.js';
import { migrate } from '../dist/src/platform/database/migrate.js';

const server = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const admin = new pg.Client({ connectionString: server });
await admin.connect();
const name = `admin_api_commit_order_${Date.now()}`;
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(server);
url.pathname = `/${name}`;
try {
  await migrate(loadSettings({ DATABASE_URL: url.toString(), LOG_LEVEL: 'silent' }), url.toString());
  const setup = new pg.Client({ connectionString: url.toString() });
  await setup.connect();
  await setup.query('CREATE TABLE plain_events (LIKE events INCLUDING DEFAULTS)');
  await setup.end();
  const cases = [
    [
      'events (position taken at commit)',
      "INSERT INTO events (type, resource_type, resource_id) VALUES ('bench.x', 'bench', $1)",
    ],
    [
      'a table without the feed triggers',
      "INSERT INTO plain_events (xid, id, type, resource_type, resource_id) VALUES (pg_current_xact_id(), 1, 'bench.x', 'bench', $1)",
    ],
  ];
  for (const [label, statement] of cases)
    for (const connections of [1, 8, 32]) {
      let commits = 0;
      const until = Date.now() + 4000;
      await Promise.all(
        Array.from({ length: connections }, async (_, lane) => {
          const client = new pg.Client({ connectionString: url.toString() });
          await client.connect();
          while (Date.now() < until) {
            await client.query('BEGIN');
            await client.query(statement, [String(lane)]);
            await client.query('COMMIT');
            commits += 1;
          }
          await client.end();
        }),
      );
      console.log(`${label}, ${connections} connections: ${Math.round(commits / 4)} commits/s`);
    }
} finally {
  await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
  await admin.end();
}
