// `npm run bench:triggers`: what the database's triggers add to each kind of write, measured on a
// throw-away database: the same transactions (the row's UPDATE and its audit event, as the
// service writes them) with every trigger in place and with one group disabled, batch after
// batch in turn, so that the machine's drift falls on both sides alike. Each figure is the
// median of seven such pairs, in µs per transaction.
import { createBenchDatabase, withClient } from './support.mjs';

const BATCH = Number(process.env.TRIGGER_BATCH ?? 200);
const log = (line) => process.stderr.write(`[triggers] ${line}\n`);

// The trigger groups, by what they keep: the event feed, the access history, the row versions.
const GROUPS = {
  'event feed': [['audit_events', 'audit_events_to_events']],
  'access history': [
    ['authorities', 'authorities_access_history_update'],
    ['users', 'users_access_history_update'],
  ],
  'row version': [
    ['authorities', 'authorities_version'],
    ['users', 'users_version'],
  ],
};

// One transaction per write, as the service sends it: the UPDATE, then its audit event.
const WRITES = {
  'authority label (PATCH)': (n) => [
    'UPDATE authorities SET label = $2 WHERE id = $1',
    [1, `label ${n}`],
    'authority.update',
    { label: [null, `label ${n}`] },
  ],
  'authority is_active (access change)': (n) => [
    'UPDATE authorities SET is_active = $2 WHERE id = $1',
    [1, n % 2 === 0],
    'authority.update',
    { is_active: [n % 2 !== 0, n % 2 === 0] },
  ],
  'user status (access change)': (n) => [
    'UPDATE users SET status_id = $2 WHERE id = $1',
    [1, n % 2 === 0 ? 2 : 3],
    'user.update',
    { status_id: [n % 2 === 0 ? 3 : 2, n % 2 === 0 ? 2 : 3] },
  ],
};

async function batch(client, write) {
  const started = process.hrtime.bigint();
  for (let n = 0; n < BATCH; n += 1) {
    const [text, params, action, changes] = write(n);
    await client.query('BEGIN');
    await client.query(text, params);
    await client.query(
      "INSERT INTO audit_events (actor_id, action, resource_type, resource_id, changes) VALUES (NULL, $1, split_part($1, '.', 1), '1', $2)",
      [action, JSON.stringify(changes)],
    );
    await client.query('COMMIT');
  }
  return Number(process.hrtime.bigint() - started) / 1000 / BATCH;
}

const median = (values) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)];

/** Batches with all triggers and without `triggers`, in turn: the median of each and of their differences. */
async function paired(client, write, triggers) {
  const all = [];
  const differences = [];
  for (let pair = 0; pair < 7; pair += 1) {
    const withAll = await batch(client, write);
    for (const [table, trigger] of triggers) await client.query(`ALTER TABLE ${table} DISABLE TRIGGER ${trigger}`);
    const without = await batch(client, write);
    for (const [table, trigger] of triggers) await client.query(`ALTER TABLE ${table} ENABLE TRIGGER ${trigger}`);
    all.push(withAll);
    differences.push(withAll - without);
  }
  return { all: median(all), added: median(differences) };
}

const database = await createBenchDatabase();
try {
  const rows = await withClient(database.url, async (client) => {
    await client.query(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('t@example.com', 'T', 3, 2)",
    );
    await client.query("INSERT INTO devices (serial_number, name) VALUES ('T-1', 'T')");
    await client.query('INSERT INTO authorities (device_id, user_id) VALUES (1, 1)');
    const found = [];
    for (const [name, write] of Object.entries(WRITES)) {
      await batch(client, write); // warm-up
      const row = { write: name };
      const totals = [];
      for (const [group, triggers] of Object.entries(GROUPS)) {
        const { all, added } = await paired(client, write, triggers);
        totals.push(all);
        row[`${group} µs`] = Math.round(added);
      }
      row['all triggers µs'] = Math.round(median(totals));
      log(`${name}: ${JSON.stringify(row)}`);
      found.push(row);
    }
    return found;
  });
  console.table(rows);
} finally {
  await database.drop();
}
