// 3. bulk-grant of 1000 items: the service's latency against the same set-based statements
// sent through raw pg (lock, resolve, insert, read back, audit with the same changes, the
// access.gained events the contract asks for, bump versions; one transaction). What is left is the service's own: HTTP, validation, the checks,
// the response and the cache work after the commit.
import pg from 'pg';
import { INSERT_MANY, RESOLVE } from '../../dist/src/grants/authority-permissions.repository.js';
import { percentile, ratio } from '../support.mjs';

export async function rawBulkGrant(client, authorityIds, permissionId) {
  await client.query('BEGIN');
  await client.query('SELECT id FROM authorities WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE', [
    [...new Set(authorityIds)],
  ]);
  const permissions = authorityIds.map(() => permissionId);
  const resolved = await client.query(RESOLVE, [authorityIds, permissions]);
  const inserted = await client.query(INSERT_MANY, [authorityIds, permissions, null, authorityIds.map(() => null)]);
  const ids = inserted.rows.map((row) => row.id);
  const rows = await client.query(
    `SELECT CASE WHEN ap.revoked_at IS NULL THEN 1 ELSE 2 END AS version, ap.id, ap.authority_id, a.device_id, ap.permission_id, p.code AS permission_code
     FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id JOIN permissions p ON p.id = ap.permission_id WHERE ap.id = ANY($1::bigint[])`,
    [ids],
  );
  // The audit trail and the event feed, as the service writes them (one statement).
  await client.query(
    `WITH e AS (SELECT e.* FROM (SELECT set_config('admin_api.feed_written', 'on', true)) f, unnest($1::text[], $2::jsonb[]) AS e(id, changes)),
     audited AS (
       INSERT INTO audit_events (actor_id, action, resource_type, resource_id, request_id, reason, changes)
       SELECT NULL, 'authority_permission.grant', 'authority_permission', e.id, NULL, NULL, e.changes FROM e)
     INSERT INTO events (type, resource_type, resource_id, data)
     SELECT 'authority_permission.grant', 'authority_permission', e.id, jsonb_build_object('changes', e.changes) FROM e`,
    [
      rows.rows.map((row) => String(row.id)),
      rows.rows.map((row) =>
        JSON.stringify({ authority_id: [null, row.authority_id], permission_code: [null, row.permission_code] }),
      ),
    ],
  );
  // The access each grant gives (part 6.17): one access.gained per new right, one raw INSERT (the
  // holder has no other way to the permission on these devices, so every grant is a gain).
  await client.query(
    `INSERT INTO events (type, resource_type, resource_id, data)
     SELECT 'access.gained', 'user', a.user_id::text,
            jsonb_build_object('user_id', a.user_id, 'device_id', a.device_id, 'permission_code', $2::text,
                               'decided_by', 'authority_permission', 'cause', 'write')
     FROM authorities a WHERE a.id = ANY($1::bigint[])`,
    [rows.rows.map((row) => row.authority_id), rows.rows[0]?.permission_code ?? ''],
  );
  await client.query(
    `INSERT INTO projection_versions (scope, id, version) SELECT 'device', unnest($1::bigint[]), 2
     ON CONFLICT (scope, id) DO UPDATE SET version = projection_versions.version + 1`,
    [[...new Set(resolved.rows.map((row) => row.device_id))].sort((a, b) => a - b)],
  );
  await client.query('COMMIT');
}

export async function bulkGrant(ctx) {
  const client = new pg.Client({ connectionString: ctx.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT id FROM authorities WHERE user_id = $1 ORDER BY id LIMIT 34000', [
      ctx.bulkHolderId,
    ]);
    const blocks = Array.from({ length: 34 }, (_, index) =>
      rows.slice(index * 1000, (index + 1) * 1000).map((row) => Number(row.id)),
    );
    const service = [];
    const base = [];
    for (let iteration = 0; iteration < 17; iteration += 1) {
      const serviceBlock = blocks[iteration * 2];
      const started = performance.now();
      const response = await fetch(`${ctx.serviceUrl}/v1/admin/authority-permissions/bulk-grant`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ items: serviceBlock.map((id) => ({ authority_id: id, permission_id: 9 })) }),
      });
      const body = await response.json();
      if (response.status !== 200 || body.data.processed !== 1000)
        throw new Error(`bulk-grant answered ${response.status}: ${JSON.stringify(body).slice(0, 200)}`);
      service.push(performance.now() - started);
      const baseStarted = performance.now();
      await rawBulkGrant(client, blocks[iteration * 2 + 1], 9);
      base.push(performance.now() - baseStarted);
    }
    // The first three rounds warm both sides up (JIT, plans, pools).
    const serviceMs = Math.round(percentile(service.slice(3), 50));
    const baseMs = Math.round(percentile(base.slice(3), 50));
    const r = ratio(serviceMs, baseMs);
    return [
      {
        scenario: '3 bulk-grant, 1000 items',
        metric: 'median ms',
        service: serviceMs,
        baseline: baseMs,
        ratio: r,
        goal: '<= 1.5x',
        met: r <= 1.5,
        notes: `median of 14 after 3 warm-up rounds; the service also validates 1000 items and marks 1000 device authority sets stale`,
      },
    ];
  } finally {
    await client.end();
  }
}
