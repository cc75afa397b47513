import { randomUUID } from 'node:crypto';
import { actor, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';
import { body, scim } from '../support/scim.js';

/** The feed's events about a user: their types, and the permissions access.gained names. */
async function feedOf(userId: number | string): Promise<{ types: string[]; gained: string[] }> {
  const rows = await sql<{ type: string; permission: string | null }>(
    `SELECT type, data->>'permission_code' AS permission FROM events
      WHERE (resource_type = 'user' AND resource_id = $1::text) OR (type LIKE 'access.%' AND (data->>'user_id')::bigint = $1::bigint)
      ORDER BY seq, id`,
    [String(userId)],
  );
  return {
    types: [...new Set(rows.map((row) => row.type))].sort(),
    gained: rows
      .flatMap((row) => (row.type === 'access.gained' && row.permission !== null ? [row.permission] : []))
      .sort(),
  };
}

/*
 * A SCIM write reaches the feed like the same change through /v1/admin (part 6.19): a user created
 * active by SCIM (with SCIM_DEFAULT_ROLE_ID viewer here, a role that confers permissions) puts on
 * the feed what an admin's create then activate puts there, access.gained for each permission
 * included.
 */
describe('SCIM writes on the event feed (part 6.19 with part 6.17)', () => {
  const app = useApp({ widgets: false, env: { SCIM_DEFAULT_ROLE_ID: '4' } });
  let idp: Caller;
  beforeAll(async () => {
    idp = await actor('super_admin');
  });

  it('a user created active through SCIM: the same events as POST /users then /activate', async () => {
    const made = await caller(app.t, app.root)
      .post('/v1/admin/users', { email: `admin-made-${randomUUID()}@x.co`, display_name: 'Admin made', role_id: 4 })
      .expect(201);
    await caller(app.t, app.root).post(`/v1/admin/users/${made.body.data.id}/activate`).expect(200);
    const provisioned = await scim(app.t, idp)
      .post('/Users', { userName: `scim-made-${randomUUID()}@x.co` })
      .expect(201);
    const viaAdmin = await feedOf(made.body.data.id as number);
    const viaScim = await feedOf(body(provisioned).id as string);
    expect(viaAdmin.types).toEqual(['access.gained', 'user.activate', 'user.create']);
    expect(viaAdmin.gained.length).toBeGreaterThan(0);
    expect(viaScim).toEqual(viaAdmin);
  });

  it('a deactivation through SCIM: user.suspend and access.lost for each permission, as POST /suspend', async () => {
    const provisioned = await scim(app.t, idp)
      .post('/Users', { userName: `scim-gone-${randomUUID()}@x.co` })
      .expect(201);
    const id = body(provisioned).id as string;
    const gained = (await feedOf(id)).gained;
    await scim(app.t, idp)
      .patch(`/Users/${id}`, { Operations: [{ op: 'replace', path: 'active', value: false }] })
      .expect(200);
    const lost = await sql<{ permission: string }>(
      `SELECT data->>'permission_code' AS permission FROM events WHERE type = 'access.lost' AND (data->>'user_id')::bigint = $1 ORDER BY 1`,
      [id],
    );
    expect(lost.map((row) => row.permission)).toEqual(gained);
    expect((await feedOf(id)).types).toContain('user.suspend');
  });
});
