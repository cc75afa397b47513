// Baseline for the authority list: a bare node:http + pg route running the service's SQL
// (page, capped count in parallel, the planner's estimate past 10 000) and sending the envelope.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const COLUMNS = `id, device_id, user_id, owner, is_active, revoked_at, revoked_by, revoke_reason, expires_at, label, assigned_by, assigned_at,
  created_at, updated_at, created_by, updated_by, is_deleted, deleted_at, deleted_by`;

const server = createServer(async (request, response) => {
  const url = new URL(request.url ?? '/', 'http://x');
  if (url.pathname === '/health/ready') return response.end('{}');
  const page = Number(url.searchParams.get('page') ?? 1);
  const filter = url.searchParams.has('user_id')
    ? ['user_id', Number(url.searchParams.get('user_id'))]
    : ['is_active', url.searchParams.get('is_active') === 'true'];
  const where = `WHERE is_deleted = false AND ${filter[0]} = $1`;
  const [rows, capped] = await Promise.all([
    pool.query(`SELECT ${COLUMNS} FROM authorities ${where} ORDER BY created_at DESC, id ASC LIMIT $2 OFFSET $3`, [
      filter[1],
      25,
      (page - 1) * 25,
    ]),
    pool.query(`SELECT count(*) AS n FROM (SELECT 1 FROM authorities ${where} LIMIT 10001) capped`, [filter[1]]),
  ]);
  let total = Number(capped.rows[0].n);
  let exact = true;
  if (total > 10000) {
    const plan = await pool.query(`EXPLAIN (FORMAT JSON) SELECT 1 FROM authorities ${where}`, [filter[1]]);
    total = Math.max(Math.round(plan.rows[0]['QUERY PLAN'][0].Plan['Plan Rows']), 10001);
    exact = false;
  }
  const requestId = randomUUID();
  response.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-request-id': requestId,
  });
  response.end(
    JSON.stringify({
      success: true,
      data: rows.rows,
      meta: { request_id: requestId, page, page_size: 25, total, total_exact: exact },
    }),
  );
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
