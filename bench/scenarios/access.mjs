// 9. Access questions over 1 000 000 authorities (part 6.13), on an instance without the list
// cache so every request answers from the database: who may revoke on a device, and where a user
// with 50 000 authorities may revoke: one holding it on 1 000 of them (a large operator), one on
// 10 000 (an extreme one), and another user's 5 000 as owner, now and as of a moment before 2 000
// revocations and 1 000 deactivations. Each URL is warmed for two seconds, then loaded with 10
// connections (the large answers also with 1).
import { load, startChild, withClient } from '../support.mjs';

const PERMISSION = 'authorities.revoke';

export async function accessQuestions(ctx) {
  const [holder, owner, operator] = ctx.accessHolders;
  const { device, before } = await withClient(ctx.databaseUrl, async (client) => {
    await client.query(
      `INSERT INTO authority_permissions (authority_id, permission_id)
       SELECT a.id, p.id FROM authorities a, permissions p WHERE a.user_id = $1 AND a.id % 5 = 0 AND p.code = $2`,
      [holder, PERMISSION],
    );
    await client.query('UPDATE authorities SET owner = true WHERE user_id = $1 AND id % 10 = 0', [owner]);
    await client.query(
      `INSERT INTO authority_permissions (authority_id, permission_id)
       SELECT a.id, p.id FROM authorities a, permissions p WHERE a.user_id = $1 AND a.id % 50 = 0 AND p.code = $2`,
      [operator, PERMISSION],
    );
    const {
      rows: [moment],
    } = await client.query('SELECT now() AS at');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await client.query(
      `UPDATE authority_permissions SET revoked_at = now() WHERE id IN (
         SELECT ap.id FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id
         WHERE a.user_id = $1 AND ap.revoked_at IS NULL ORDER BY ap.id LIMIT 2000)`,
      [holder],
    );
    await client.query(
      `UPDATE authorities SET is_active = false WHERE id IN (
         SELECT id FROM authorities WHERE user_id = $1 AND owner ORDER BY id LIMIT 1000)`,
      [owner],
    );
    // Settled before measuring, as the seed is: no autovacuum of these writes in the middle of a run.
    for (const table of [
      'authorities',
      'authority_permissions',
      'authority_history',
      'authority_permission_history',
      'authority_right_history',
      'authority_rights',
    ])
      await client.query(`VACUUM ANALYZE ${table}`);
    const {
      rows: [row],
    } = await client.query(
      `SELECT a.device_id FROM authorities a JOIN authority_permissions ap ON ap.authority_id = a.id
       WHERE a.user_id = $1 AND ap.revoked_at IS NULL ORDER BY a.device_id DESC LIMIT 1`,
      [holder],
    );
    return { device: Number(row.device_id), before: moment.at.toISOString() };
  });
  const uncached = await startChild(
    new URL('../../dist/src/main.js', import.meta.url).pathname,
    { ...ctx.env, LIST_CACHE: 'false', PORT: String(ctx.ports.access) },
    `http://127.0.0.1:${ctx.ports.access}/health/ready`,
  );
  const base = `http://127.0.0.1:${ctx.ports.access}/v1/admin`;
  const headers = { authorization: `Bearer ${ctx.token}` };
  const at = `&at=${encodeURIComponent(before)}`;
  const rows = [];
  try {
    for (const [label, path, goal, connections = 10] of [
      ['device access, page 1', `/devices/${device}/access?permission=${PERMISSION}`, 50],
      ['device access at T, page 1', `/devices/${device}/access?permission=${PERMISSION}${at}`, 100],
      ['user access (1 000), page 1', `/users/${operator}/access?permission=${PERMISSION}`, 50],
      ['user access (1 000), page 40', `/users/${operator}/access?permission=${PERMISSION}&page=40`, 50],
      ['user access (1 000) at T, page 1', `/users/${operator}/access?permission=${PERMISSION}${at}`, 100],
      ['user access (8 000), page 1', `/users/${holder}/access?permission=${PERMISSION}`, 50],
      ['user access (10 000) at T, page 200', `/users/${holder}/access?permission=${PERMISSION}&page=200${at}`, 100],
      ['owner access (5 000) at T, page 100', `/users/${owner}/access?permission=${PERMISSION}&page=100${at}`, 100],
      // The same large answers one at a time: what a request costs without queueing behind nine others.
      ['user access (8 000), page 1', `/users/${holder}/access?permission=${PERMISSION}`, 50, 1],
      ['user access (10 000) at T, page 200', `/users/${holder}/access?permission=${PERMISSION}&page=200${at}`, 100, 1],
    ]) {
      const check = await (await fetch(`${base}${path}`, { headers })).json();
      if (!Array.isArray(check.data) || check.data.length === 0 || check.meta?.cache !== 'bypass')
        throw new Error(`access ${label} answered ${JSON.stringify(check).slice(0, 300)}`);
      await load(`${base}${path}`, { headers, connections, duration: 2 });
      const result = await load(`${base}${path}`, { headers, connections, duration: ctx.shortDuration });
      rows.push({
        scenario: `9 ${label}, uncached (${connections} conn)`,
        metric: 'p99 ms',
        service: result.p99_ms,
        baseline: '',
        ratio: '',
        goal: `< ${goal}`,
        met: result.p99_ms < goal && result.non2xx === 0 && result.errors === 0,
        notes: `${result.rps} req/s, p50 ${result.p50_ms} ms; total ${check.meta.total}; non-2xx ${result.non2xx}`,
      });
    }
  } finally {
    await uncached.stop();
  }
  return rows;
}
