import type { EntityManager } from 'typeorm';
import type { Settings } from '../platform/config/settings.js';

import { CliError, options, say, type Command } from './command.js';

const CHUNK = 1000;

function usersOption(args: readonly string[]): number {
  const raw = options(args, { users: { type: 'string' } }).users ?? '200';
  if (!/^\d+$/.test(raw) || Number(raw) < 10 || Number(raw) > 1_000_000)
    throw new CliError('--users must be an integer between 10 and 1000000', 2);
  return Number(raw);
}

/** A progress bar on stderr when it is a terminal; one line per 10% otherwise. */
function progress(total: number): (done: number) => void {
  let lastTenth = -1;
  return (done) => {
    const share = done / total;
    if (process.stderr.isTTY) {
      const filled = Math.round(share * 30);
      process.stderr.write(
        `\r  [${'#'.repeat(filled)}${'.'.repeat(30 - filled)}] ${Math.round(share * 100)}% ${done}/${total} users${done === total ? '\n' : ''}`,
      );
    } else if (Math.floor(share * 10) > lastTenth) {
      lastTenth = Math.floor(share * 10);
      say(
        `  [${'#'.repeat(lastTenth * 3)}${'.'.repeat(30 - lastTenth * 3)}] ${lastTenth * 10}% ${done}/${total} users`,
      );
    }
  };
}

/*
 * One chunk of demo users [from, to] and everything around them, in set-based statements keyed
 * on stable names (demo-user-<n>, DEMO-<n>, demo-token-<n>, data.demo_key), so a re-run adds
 * nothing twice. Roles: 1 in 50 super_admin, then admin, operators, viewers and members; statuses:
 * 1 in 7 pending, 1 in 11 suspended. Every second user owns a device that the next two share.
 */
async function seedChunk(db: EntityManager, from: number, to: number): Promise<void> {
  const range = [from, to];
  await db.query(
    `INSERT INTO users (email, display_name, phone, role_id, status_id)
     SELECT 'demo-user-' || g || '@demo.example.com', 'Demo User ' || g, '+3519' || lpad(g::text, 8, '0'),
            CASE WHEN g % 50 = 0 THEN 1 WHEN g % 10 = 1 THEN 2 WHEN g % 10 IN (2, 3) THEN 3 WHEN g % 10 IN (4, 5) THEN 4 ELSE 5 END,
            CASE WHEN g % 7 = 0 THEN 1 WHEN g % 11 = 0 THEN 3 ELSE 2 END
     FROM generate_series($1::int, $2::int) g
     ON CONFLICT ((lower(email))) DO NOTHING`,
    range,
  );
  // Temporary map of this chunk's demo numbers to user ids.
  await db.query(
    `CREATE TEMP TABLE IF NOT EXISTS demo_chunk (n int PRIMARY KEY, user_id bigint NOT NULL) ON COMMIT DELETE ROWS`,
  );
  await db.query(
    `INSERT INTO demo_chunk (n, user_id)
     SELECT substring(email from 'demo-user-(\\d+)@')::int, id FROM users
     WHERE lower(email) = ANY(ARRAY(SELECT 'demo-user-' || g || '@demo.example.com' FROM generate_series($1::int, $2::int) g))`,
    range,
  );
  await db.query(
    `WITH owners AS (SELECT n, user_id FROM demo_chunk WHERE n % 2 = 0)
     INSERT INTO devices (serial_number, name, model, owner_user_id)
     SELECT 'DEMO-' || n, 'Demo door ' || n, (ARRAY['X100', 'X200', 'Gate 3'])[1 + n % 3], user_id FROM owners
     ON CONFLICT (serial_number) DO NOTHING`,
  );
  await db.query(
    `INSERT INTO authorities (device_id, user_id, owner, label)
     SELECT d.id, c.user_id, true, 'owner' FROM demo_chunk c JOIN devices d ON d.serial_number = 'DEMO-' || c.n WHERE c.n % 2 = 0
     ON CONFLICT DO NOTHING`,
  );
  await db.query(
    `INSERT INTO ownership_transfers (device_id, from_user_id, to_user_id, reason)
     SELECT d.id, NULL, d.owner_user_id, 'demo data' FROM devices d JOIN demo_chunk c ON d.serial_number = 'DEMO-' || c.n
     WHERE NOT EXISTS (SELECT 1 FROM ownership_transfers t WHERE t.device_id = d.id)`,
  );
  // The two users after each owner share the device, one of them with a device permission.
  await db.query(
    `INSERT INTO authorities (device_id, user_id, label, expires_at)
     SELECT d.id, c.user_id, 'shared', CASE WHEN c.n % 4 = 3 THEN now() + interval '90 days' END
     FROM demo_chunk c JOIN devices d ON d.serial_number = 'DEMO-' || (c.n - 1 - (c.n - 1) % 2)
     WHERE c.n % 2 = 1
     ON CONFLICT DO NOTHING`,
  );
  await db.query(
    `INSERT INTO authority_permissions (authority_id, permission_id)
     SELECT a.id, p.id FROM authorities a JOIN demo_chunk c ON c.user_id = a.user_id JOIN permissions p ON p.code = 'devices.read'
     WHERE NOT a.owner
     ON CONFLICT DO NOTHING`,
  );
  await db.query(
    `INSERT INTO permission_grants (user_id, permission_id, reason, expires_at)
     SELECT c.user_id, p.id, 'demo data', now() + interval '30 days' FROM demo_chunk c JOIN permissions p ON p.code = 'audit.read'
     WHERE c.n % 10 = 2 AND NOT EXISTS (SELECT 1 FROM permission_grants g WHERE g.user_id = c.user_id AND g.permission_id = p.id AND g.revoked_at IS NULL)`,
  );
  await db.query(
    `INSERT INTO inbox_messages (user_id, conversation_id, type, title, body, data)
     SELECT c.user_id, 'demo-conv-' || (c.n % 5), (ARRAY['notice', 'alert', 'shift_change'])[1 + k % 3],
            'Demo message ' || k || ' for user ' || c.n, 'This is demo message ' || k || '.', jsonb_build_object('demo_key', c.n || '-' || k)
     FROM demo_chunk c CROSS JOIN generate_series(1, 3) k
     WHERE NOT EXISTS (SELECT 1 FROM inbox_messages m WHERE m.user_id = c.user_id AND m.data->>'demo_key' = c.n || '-' || k)`,
  );
  await db.query(
    `INSERT INTO message_read_state (message_id, user_id, conversation_id, is_read, read_at)
     SELECT m.id, m.user_id, m.conversation_id, m.id % 2 = 0, CASE WHEN m.id % 2 = 0 THEN now() END
     FROM inbox_messages m JOIN demo_chunk c ON c.user_id = m.user_id
     ON CONFLICT (message_id, user_id) DO NOTHING`,
  );
  await db.query(
    `INSERT INTO mobile_devices (user_id, platform, push_token, app_version, device_model)
     SELECT c.user_id, (ARRAY['ios', 'android', 'web'])[1 + c.n % 3], 'demo-token-' || c.n || '-' || md5(c.n::text), '3.' || (c.n % 9) || '.0', 'Demo phone'
     FROM demo_chunk c WHERE c.n % 3 <> 0
     ON CONFLICT (push_token) DO NOTHING`,
  );
}

/** The demo rows of each resource, by the stable names seedChunk keys them on. */
const DEMO_ROWS = `SELECT
  (SELECT count(*) FROM users WHERE email LIKE 'demo-user-%@demo.example.com')::int AS users,
  (SELECT count(*) FROM devices WHERE serial_number LIKE 'DEMO-%')::int AS devices,
  (SELECT count(*) FROM authorities a JOIN devices d ON d.id = a.device_id WHERE d.serial_number LIKE 'DEMO-%')::int AS authorities,
  (SELECT count(*) FROM permission_grants WHERE reason = 'demo data')::int AS permission_grants,
  (SELECT count(*) FROM inbox_messages WHERE data ? 'demo_key')::int AS inbox_messages,
  (SELECT count(*) FROM mobile_devices WHERE push_token LIKE 'demo-token-%')::int AS mobile_devices,
  (SELECT count(*) FROM groups WHERE name LIKE 'Demo %')::int AS groups,
  (SELECT count(*) FROM group_memberships WHERE reason = 'demo data')::int AS group_memberships`;

/**
 * Demo teams, once for the whole seed (stable names, so a re-run adds nothing twice): night
 * operators (the operator role, for members whose own role is member), a nested team of them in
 * building B holding an authority on the first demo device with two authority permissions, and
 * auditors holding a grant of `audit.read`. Members are drawn from the first 200 demo users.
 */
async function seedGroups(db: EntityManager): Promise<void> {
  await db.query(`INSERT INTO groups (name, description, role_id) VALUES
      ('Demo night operators', 'Everyone on the night shift', 3),
      ('Demo night operators, building B', 'The night shift of building B (nested in Demo night operators)', NULL),
      ('Demo auditors', 'Read the audit trail', 4)
    ON CONFLICT ((lower(name))) DO NOTHING`);
  const ids = `(SELECT id FROM groups WHERE name = 'Demo night operators') AS night,
      (SELECT id FROM groups WHERE name = 'Demo night operators, building B') AS building_b,
      (SELECT id FROM groups WHERE name = 'Demo auditors') AS auditors`;
  // Users whose demo number n (1–200) falls in the team; each team once per user.
  await db.query(`WITH g AS (SELECT ${ids}),
      wanted AS (
        SELECT CASE WHEN n % 10 = 6 THEN g.night WHEN n % 10 = 7 THEN g.building_b ELSE g.auditors END AS group_id, u.id AS user_id
        FROM users u CROSS JOIN g
        CROSS JOIN LATERAL (SELECT substring(u.email from 'demo-user-(\\d+)@')::int AS n) d
        WHERE u.email LIKE 'demo-user-%@demo.example.com' AND d.n <= 200 AND d.n % 10 IN (6, 7, 8))
    INSERT INTO group_memberships (group_id, user_id, reason)
    SELECT w.group_id, w.user_id, 'demo data' FROM wanted w
    WHERE NOT EXISTS (SELECT 1 FROM group_memberships m WHERE m.group_id = w.group_id AND m.user_id = w.user_id AND m.removed_at IS NULL)`);
  await db.query(`WITH g AS (SELECT ${ids})
    INSERT INTO group_memberships (group_id, member_group_id, reason)
    SELECT g.night, g.building_b, 'demo data' FROM g
    WHERE NOT EXISTS (SELECT 1 FROM group_memberships m WHERE m.group_id = g.night AND m.member_group_id = g.building_b AND m.removed_at IS NULL)`);
  await db.query(`WITH g AS (SELECT ${ids})
    INSERT INTO authorities (device_id, group_id, label)
    SELECT d.id, g.building_b, 'demo team authority' FROM g
    CROSS JOIN (SELECT id FROM devices WHERE serial_number LIKE 'DEMO-%' ORDER BY id LIMIT 1) d
    ON CONFLICT (device_id, group_id) WHERE group_id IS NOT NULL DO NOTHING`);
  await db.query(`INSERT INTO authority_permissions (authority_id, permission_id)
    SELECT a.id, p.id FROM authorities a JOIN groups g ON g.id = a.group_id AND g.name = 'Demo night operators, building B'
    JOIN permissions p ON p.code IN ('authorities.read', 'devices.read')
    WHERE NOT EXISTS (SELECT 1 FROM authority_permissions x WHERE x.authority_id = a.id AND x.permission_id = p.id AND x.revoked_at IS NULL)`);
  await db.query(`INSERT INTO permission_grants (group_id, permission_id, reason)
    SELECT g.id, p.id, 'demo data' FROM groups g JOIN permissions p ON p.code = 'audit.read'
    WHERE g.name = 'Demo auditors'
      AND NOT EXISTS (SELECT 1 FROM permission_grants x WHERE x.group_id = g.id AND x.permission_id = p.id AND x.revoked_at IS NULL)`);
}

/** The first active demo super_admin (else admin) and a demo device, for hints with real ids. */
const DEMO_HINTS = `SELECT
  (SELECT id FROM users WHERE email LIKE 'demo-user-%@demo.example.com' AND status_id = 2 AND NOT is_deleted
   ORDER BY role_id, id LIMIT 1)::int AS admin_id,
  (SELECT role_id FROM users WHERE email LIKE 'demo-user-%@demo.example.com' AND status_id = 2 AND NOT is_deleted
   ORDER BY role_id, id LIMIT 1)::int AS admin_role,
  (SELECT id FROM devices WHERE serial_number LIKE 'DEMO-%' ORDER BY id LIMIT 1)::int AS device_id`;

type Counts = Record<string, number>;

function describeCounts(before: Counts, after: Counts): string[] {
  return Object.keys(after).map((name) => {
    const added = (after[name] ?? 0) - (before[name] ?? 0);
    return `  ${name.padEnd(18)} ${String(added).padStart(8)} added, ${String(before[name] ?? 0).padStart(8)} already there`;
  });
}

export const SEED_DEMO: Command = {
  summary: 'fill demo data across every resource (idempotent: a re-run adds nothing twice)',
  usage: '[--users N]',
  options: [
    [
      '--users N',
      'how many demo users, 10–1000000 (default 200); each second one owns a device that the next two share, with messages, grants and phones',
    ],
  ],
  validate: usersOption,
  async run(settings: Settings, databaseUrl: string, args: readonly string[]) {
    const users = usersOption(args);
    const { ServerCaches, withDatabase } = await import('./database.js');
    // Many tables, many chunks: running servers drop their whole cache once it is done.
    const caches = new ServerCaches(settings, databaseUrl);
    const code = await withDatabase(settings, databaseUrl, async (dataSource) => {
      const started = Date.now();
      const [before = {}] = await dataSource.query<Counts[]>(DEMO_ROWS);
      say(`seeding demo data for ${users} users…`);
      const report = progress(users);
      for (let from = 1; from <= users; from += CHUNK) {
        const to = Math.min(users, from + CHUNK - 1);
        await dataSource.transaction((db) => seedChunk(db, from, to));
        report(to);
      }
      await dataSource.transaction((db) => seedGroups(db));
      await caches.inTransaction(dataSource.manager);
      const [after = {}] = await dataSource.query<Counts[]>(DEMO_ROWS);
      const [hints] =
        await dataSource.query<{ admin_id: number | null; admin_role: number | null; device_id: number | null }[]>(
          DEMO_HINTS,
        );
      say(`done in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
      for (const line of describeCounts(before, after)) say(line);
      if (hints?.admin_id != null) {
        const role = hints.admin_role === 1 ? 'super_admin' : 'admin';
        say(
          `sign in as demo ${role} ${hints.admin_id}: TOKEN=$(npx admin-api issue-token --user-id ${hints.admin_id})`,
        );
      }
      if (hints?.device_id != null)
        say(
          `then: curl -H "Authorization: Bearer $TOKEN" "localhost:${settings.port}/v1/admin/authorities?device_id=${hints.device_id}"`,
        );
      return 0;
    });
    await caches.afterCommit();
    return code;
  },
};
