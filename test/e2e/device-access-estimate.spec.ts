import { signToken, type Caller, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sqlOn } from '../support/db.js';
import { createOwnDatabase } from '../support/own-database.js';
import { caller } from '../support/requests.js';

/*
 * The windows' estimate (device-access-walk.ts `estimate`) scales the users found by the id range of
 * the candidates: a gap in user ids (end users signed up in between, ids used by rolled-back
 * inserts) inflates it without bound, and a page past the end then answers that estimate although
 * the walk just read the whole answer. 14 000 viewers, then the id sequence moves on, then one viewer.
 */
describe('the device question total beyond 10 000 when user ids are sparse', () => {
  let own: { url: string; drop: () => Promise<void> };
  const sql = <T>(text: string, params: unknown[] = []): Promise<T[]> => sqlOn<T>(own.url, text, params);
  let t: TestApp;
  let root: Caller;
  let url: string;
  beforeAll(async () => {
    own = await createOwnDatabase('device_access_estimate');
    t = await startApp({ widgets: false, databaseUrl: own.url, env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
    const [user] = await sql<TestUser>(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('estimate-root@example.com', 'Root', 1, 2) RETURNING id, email, role_id, status_id",
    );
    const [session] = await sql<{ id: string }>(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
      [user?.id],
    );
    const token = signToken({ sub: String(user?.id), sid: session?.id ?? '' });
    root = { user: user as TestUser, token, auth: `Bearer ${token}` };
    await sql(`INSERT INTO users (email, display_name, role_id, status_id)
               SELECT 'estimate-' || i || '@example.com', 'v', 4, 2 FROM generate_series(1, 14000) i ORDER BY i`);
    await sql("SELECT setval('users_id_seq', 5000000)");
    await sql(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('estimate-late@example.com', 'v', 4, 2)",
    );
    // An id of 0 (an import may set ids; nothing forbids it): the first window began after 0.
    await sql(
      "INSERT INTO users (id, email, display_name, role_id, status_id) VALUES (0, 'estimate-zero@example.com', 'v', 4, 2)",
    );
    await sql('ANALYZE users');
    const [device] = await sql<{ id: number }>(
      "INSERT INTO devices (serial_number, name) VALUES ('SN-estimate', 'd') RETURNING id",
    );
    url = `/v1/admin/devices/${device?.id}/access?permission=authorities.read&page_size=25`;
  }, 180_000);
  afterAll(async () => {
    await t?.close();
    await own?.drop();
  });

  it('estimates near the truth, and answers the real total past the end', async () => {
    const exact = (await caller(t, root).get(`${url}&count=exact`).expect(200)).body.meta;
    expect(exact).toMatchObject({ total: 14_003, total_exact: true });
    const first = (await caller(t, root).get(url).expect(200)).body.meta;
    // Observed: 5 000 001 (more than there are users at all).
    expect(first.total).toBeLessThanOrEqual(2 * 14_003);
    const past = await caller(t, root).get(`${url}&page=1000`).expect(200);
    expect(past.body.data).toEqual([]);
    // Observed: 5 000 001, total_exact false (the remembered estimate; asked first, or sorted desc: 14 003 exact).
    expect(past.body.meta).toMatchObject({ total: 14_003, total_exact: true });
  }, 120_000);

  it('a user whose id is 0 is in the answer, first in ascending order and last in descending, as with count=exact', async () => {
    for (const sort of ['user_id:asc', 'user_id:desc']) {
      const ids = async (count: string): Promise<number[]> =>
        ((await caller(t, root).get(`${url}&sort=${sort}${count}`).expect(200)).body.data as { user_id: number }[]).map(
          (item) => item.user_id,
        );
      expect(await ids('')).toEqual(await ids('&count=exact'));
    }
    const ascending = (await caller(t, root).get(`${url}&sort=user_id:asc`).expect(200)).body.data as {
      user_id: number;
    }[];
    expect(ascending[0]?.user_id).toBe(0);
    const last = Math.ceil(14_003 / 25);
    const descending = (await caller(t, root).get(`${url}&sort=user_id:desc&page=${last}`).expect(200)).body;
    expect(descending.data.at(-1)?.user_id).toBe(0);
    expect(descending.meta).toMatchObject({ total: 14_003, total_exact: true });
  }, 120_000);
});
