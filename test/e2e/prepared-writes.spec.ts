import { DataSource } from 'typeorm';
import { PREPARED_WRITES_PER_KIND } from '../../src/platform/database/prepared.js';
import { actor, createUser, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';
import { scim } from '../support/scim.js';

/*
 * The writes of every request are prepared statements on their connection (a user's insert and
 * patch return its effective role through its groups: planning them cost more than running them).
 * A kind whose texts vary with what the request sets keeps only its first few. One pooled
 * connection, so this spec sees the statements its requests left there.
 */
describe('prepared writes', () => {
  const app = useApp({ widgets: false, env: { DB_POOL_SIZE: '1' } });
  let idp: Caller;
  beforeAll(async () => {
    idp = await actor('super_admin');
  });

  const kept = async (prefix: string): Promise<{ name: string; generic_plans: string }[]> =>
    app.t.app
      .get(DataSource)
      .query<{ name: string; generic_plans: string }[]>(
        'SELECT name, generic_plans FROM pg_prepared_statements WHERE starts_with(name, $1) ORDER BY name',
        [prefix],
      );

  it('a SCIM create runs its insert, activation and audit appends prepared, and writes what it answers', async () => {
    for (let i = 0; i < 7; i += 1) {
      const userName = `prepared-${i}-${Date.now()}@example.com`;
      const res = await scim(app.t, idp)
        .post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName, active: true })
        .expect(201);
      const [row] = await sql<{ user_name: string; status_id: number; version: number }>(
        'SELECT user_name, status_id, version FROM users WHERE id = $1',
        [Number(res.body.id)],
      );
      expect(row).toEqual({ user_name: userName, status_id: 2, version: 2 });
      expect(res.headers.etag).toBe('W/"2"');
      const events = await sql<{ action: string }>(
        "SELECT action FROM audit_events WHERE resource_type = 'user' AND resource_id = $1 ORDER BY id",
        [res.body.id],
      );
      expect(events.map((event) => event.action)).toEqual(['user.create', 'user.activate']);
    }
    expect(await kept('users-insert-')).toHaveLength(1);
    expect(await kept('users-patch-')).toHaveLength(1);
    const [append] = await kept('audit-append-');
    // Seven creates, two appends each: past PostgreSQL's five custom plans, on its generic one.
    expect(Number(append?.generic_plans)).toBeGreaterThan(0);
  });

  // The cap itself is unit-tested (prepared-writes.spec in test/unit); what a user's PATCH leaves is here.
  it("a user's PATCH sets every field each time: whatever a request changes, it adds no text", async () => {
    const user = await createUser({ role: 'viewer' });
    const changes: Record<string, unknown>[] = [
      { display_name: 'A' },
      { phone: '+15550000001' },
      { display_name: 'B', phone: '+15550000002' },
      { email: `p-${user.id}-1@example.com` },
      { email: `p-${user.id}-2@example.com`, display_name: 'C' },
      { email: `p-${user.id}-3@example.com`, phone: '+15550000003' },
      { email: `p-${user.id}-4@example.com`, display_name: 'D', phone: '+15550000004' },
      { role_id: 4 },
      { role_id: 5, display_name: 'E' },
    ];
    for (const change of changes) {
      const res = await caller(app.t, app.root).patch(`/v1/admin/users/${user.id}`, change).expect(200);
      expect(res.body.data).toMatchObject(change);
      const [row] = await sql<Record<string, unknown>>(
        `SELECT ${Object.keys(change).join(', ')} FROM users WHERE id = $1`,
        [user.id],
      );
      expect(row).toEqual(change);
    }
    // The activation's text (the first test) and the PATCH's: nine different requests, one text.
    const texts = (await kept('users-patch-')).length;
    expect(texts).toBeLessThanOrEqual(2);
    expect(texts).toBeLessThan(PREPARED_WRITES_PER_KIND);
  });

  // Found by a review: a group's PATCH sets only the fields given, so its texts vary with them.
  it(`a kind past its ${PREPARED_WRITES_PER_KIND} texts runs the others unprepared, and they write the same`, async () => {
    const created = await caller(app.t, app.root)
      .post('/v1/admin/groups', { name: `prepared-cap-${Date.now()}` })
      .expect(201);
    const id = created.body.data.id as number;
    const keys = ['name', 'description', 'external_id'];
    for (let mask = 1; mask < 8; mask += 1)
      for (let round = 0; round < 2; round += 1) {
        const body = Object.fromEntries(
          keys.filter((_, index) => ((mask >> index) & 1) === 1).map((key) => [key, `${key}-${mask}-${round}-${id}`]),
        );
        const res = await caller(app.t, app.root).patch(`/v1/admin/groups/${id}`, body).expect(200);
        expect(res.body.data).toMatchObject(body);
        const [row] = await sql<Record<string, unknown>>(
          `SELECT ${Object.keys(body).join(', ')} FROM groups WHERE id = $1`,
          [id],
        );
        expect(row).toEqual(body);
      }
    // Seven sets of fields, seven texts: the first six kept on the connection, the seventh run as text.
    expect(await kept('groups-patch-')).toHaveLength(PREPARED_WRITES_PER_KIND);
  });
});
