// Baseline for write-then-read, the bare pair: PATCH /authorities/{id} does the same UPDATE, audit
// and event INSERT (one transaction, the same triggers fire) and stores the row with a plain SET;
// GET serves it with a plain GET. No scripts, no versions, no generations.
import { createClient } from '@keyv/redis';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const redis = createClient({ url: process.env.REDIS_URL });
await redis.connect();
const COLUMNS = `version, id, device_id, user_id, owner, is_active, revoked_at, revoked_by, revoke_reason, expires_at, label, assigned_by, assigned_at,
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;

function send(response, status, json, version) {
  const requestId = randomUUID();
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-request-id': requestId,
    ...(version === undefined ? {} : { etag: `"${version}"` }),
  });
  response.end(`{"success":true,"data":${json},"meta":${JSON.stringify({ request_id: requestId })}}`);
}

function read(request) {
  return new Promise((resolve) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => resolve(body));
  });
}

async function store(row) {
  const { version, ...resource } = row;
  const json = JSON.stringify(resource);
  await redis.set(`bare:res:authority:${row.id}`, `${version}|0|${json}`, { PX: 300_000 });
  return json;
}

const server = createServer(async (request, response) => {
  if (request.url === '/health/ready') return response.end('{}');
  const id = Number(/\/(\d+)$/.exec(request.url ?? '')?.[1]);
  if (request.method === 'PATCH') {
    const { label } = JSON.parse(await read(request));
    const client = await pool.connect();
    let row;
    try {
      await client.query('BEGIN');
      row = (
        await client.query(`UPDATE authorities SET label = $2, updated_by = NULL WHERE id = $1 RETURNING ${COLUMNS}`, [
          id,
          label,
        ])
      ).rows[0];
      await client.query(
        // The audit trail and the event feed, as the service writes them (one statement).
        `WITH f AS (SELECT set_config('admin_api.feed_written', 'on', true)),
         audited AS (
           INSERT INTO audit_events (actor_id, action, resource_type, resource_id, reason, changes)
           VALUES (NULL, 'authority.update', 'authority', $1, NULL, $2))
         INSERT INTO events (type, resource_type, resource_id, data)
         SELECT 'authority.update', 'authority', $1, $3::jsonb || jsonb_build_object('changes', $2::jsonb) FROM f`,
        [String(id), JSON.stringify({ label: [null, label] }), JSON.stringify(row)],
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    return send(response, 200, await store(row), row.version);
  }
  const raw = await redis.get(`bare:res:authority:${id}`);
  const match = typeof raw === 'string' ? /^(\d+)\|([01])\|/.exec(raw) : null;
  if (match !== null) return send(response, 200, raw.slice(match[0].length), Number(match[1]));
  const row = (await pool.query(`SELECT ${COLUMNS} FROM authorities WHERE id = $1`, [id])).rows[0];
  send(response, 200, await store(row), row.version);
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () =>
  server.close(() =>
    pool
      .end()
      .then(() => redis.close())
      .then(() => process.exit(0)),
  ),
);
