import { signToken } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sqlOn } from '../support/db.js';
import { createOwnDatabase } from '../support/own-database.js';
import { scim } from '../support/scim.js';

/*
 * SCIM lists are paged by `startIndex` in id order (part 6.19). The select list presents `id` as
 * text, and ordering by that alias put user 10 before user 9. On a database of its own, so the ids
 * are small and cross a digit, and every page of two can be checked against the numeric order.
 */
describe('SCIM lists are in numeric id order across pages', () => {
  let own: { url: string; drop: () => Promise<void> };
  let app: TestApp;
  let auth: string;
  beforeAll(async () => {
    own = await createOwnDatabase('scim_list_order');
    app = await startApp({ widgets: false, databaseUrl: own.url });
    const [admin] = await sqlOn<{ id: string }>(
      own.url,
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('idp@example.com', 'IdP', 1, 2) RETURNING id",
    );
    await sqlOn(
      own.url,
      `INSERT INTO users (email, display_name, role_id, status_id)
       SELECT 'order-' || i || '@example.com', 'Order ' || i, 4, 2 FROM generate_series(1, 12) i`,
    );
    const [session] = await sqlOn<{ id: string }>(
      own.url,
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
      [admin?.id],
    );
    auth = `Bearer ${signToken({ sub: String(admin?.id), sid: session?.id ?? '' })}`;
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await own?.drop();
  });

  it('pages of two, then one page of all, list 1 … 13 in order', async () => {
    const paged: number[] = [];
    for (let start = 1; start <= 13; start += 2) {
      const res = await scim(app, { auth }).get(`/Users?startIndex=${start}&count=2&attributes=userName`).expect(200);
      expect(res.body.totalResults).toBe(13);
      paged.push(...(res.body.Resources as { id: string }[]).map((user) => Number(user.id)));
    }
    const all = await scim(app, { auth }).get('/Users?count=100&attributes=userName').expect(200);
    const ids = (all.body.Resources as { id: string }[]).map((user) => Number(user.id));
    expect(ids).toEqual(Array.from({ length: 13 }, (_, index) => index + 1));
    expect(paged).toEqual(ids);
  });
});
