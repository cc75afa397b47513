// The benchmark data set, inserted with set-based SQL: 20 users × 50 000 devices = 1 000 000
// authorities (one in ten inactive), spread over the last two years.
export const DEFAULT_DEVICES = 50_000;
export const USERS = 20;

/** `devices` per user (default 50 000: the million); the scale-out benchmark seeds fewer. */
export async function seedMillion(client, log = () => undefined, DEVICES = DEFAULT_DEVICES) {
  const started = Date.now();
  const [{ rows: users }] = [
    await client.query(
      `INSERT INTO users (email, display_name, role_id, status_id)
     SELECT 'holder-' || g || '@bench.example.com', 'Holder ' || g, 4, 2 FROM generate_series(1, ${USERS}) g RETURNING id`,
    ),
  ];
  log(`users: ${users.length}`);
  const {
    rows: [range],
  } = await client.query(
    `WITH inserted AS (INSERT INTO devices (serial_number, name) SELECT 'BENCH-' || g, 'Bench device ' || g FROM generate_series(1, ${DEVICES}) g RETURNING id)
     SELECT min(id)::bigint AS first, max(id)::bigint AS last FROM inserted`,
  );
  log(`devices: ${DEVICES}`);
  const firstUser = Math.min(...users.map((user) => Number(user.id)));
  await client.query(
    `INSERT INTO authorities (device_id, user_id, is_active, created_at, updated_at, label)
     SELECT $1::bigint + (g % ${DEVICES}), $2::bigint + (g / ${DEVICES}), g % 10 <> 0,
            now() - make_interval(secs => g * 60), now() - make_interval(secs => g * 60), NULL
     FROM generate_series(0, ${DEVICES * USERS - 1}) g`,
    [Number(range.first), firstUser],
  );
  log(`authorities: ${DEVICES * USERS}`);
  await client.query('VACUUM ANALYZE authorities');
  await client.query('ANALYZE devices');
  await client.query('ANALYZE users');
  return {
    seconds: (Date.now() - started) / 1000,
    firstUser,
    users: users.map((user) => Number(user.id)),
    firstDevice: Number(range.first),
  };
}
