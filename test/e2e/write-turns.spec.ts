import { ROLE, USER_STATUS } from '../../src/platform/auth/roles.js';
import { actor, createUser, type Caller } from '../support/auth.js';
import { sql } from '../support/db.js';
import { heldWrites, type HeldWrites } from '../support/held-writes.js';
import { startApp, type TestApp } from '../support/app.js';
import { caller } from '../support/requests.js';
import { createGroup } from '../support/groups.js';
import { scim, scimError } from '../support/scim.js';

/*
 * DB_WRITE_CONCURRENCY: an instance runs at most that many write transactions at once; the others
 * wait their turn holding no connection, for at most DB_WRITE_WAIT_MS, then answer 503 `busy`
 * and write nothing. Reads never wait for a turn. Here the one turn is held by a write the spec
 * stops at a row lock of its own connection.
 */
describe('write turns (DB_WRITE_CONCURRENCY)', () => {
  let t: TestApp;
  let root: Caller;
  let held: HeldWrites;
  beforeAll(async () => {
    t = await startApp({ widgets: false, env: { DB_WRITE_CONCURRENCY: '1', DB_WRITE_WAIT_MS: '1000' } });
    root = await actor('super_admin');
    held = await heldWrites();
  });
  afterAll(async () => {
    await held?.end();
    await t?.close();
  });

  const rename = (id: number, name: string) => caller(t, root).patch(`/v1/admin/users/${id}`, { display_name: name });

  it('a write waiting past its turn is 503 busy and writes nothing; reads answer meanwhile; it succeeds once the turn is free', async () => {
    const [first, second] = await Promise.all([createUser(), createUser()]);
    // A first write on a fresh instance, so the held one below meets a warm one.
    await rename(first.id, 'First').expect(200);
    await held.client.query('BEGIN');
    await held.client.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [first.id]);
    const firstDone = rename(first.id, 'First renamed').then((res) => res);
    await held.waitingFor(held.pid, 'the first write');

    const refused = await rename(second.id, 'Second renamed');
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body.error).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      details: { dependency: 'database', reason: 'busy' },
    });
    // An identity provider's create waits the same, and is refused in SCIM's own terms.
    const userName = `turns-${second.id}@example.com`;
    const scimRefused = await scim(t, root).post('/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName,
    });
    expect(scimRefused.status).toBe(503);
    expect(scimRefused.headers['retry-after']).toBe('1');
    expect(scimRefused.body).toMatchObject(scimError(503));
    expect(await sql('SELECT id FROM users WHERE user_name = $1', [userName])).toEqual([]);
    // A SCIM lookup and an admin read answer while the write holds the only turn.
    await scim(t, root)
      .get(`/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`)
      .expect(200);
    const read = await caller(t, root).get(`/v1/admin/users/${second.id}`).expect(200);
    expect(read.body.data.display_name).not.toBe('Second renamed');
    const [row] = await sql<{ display_name: string }>('SELECT display_name FROM users WHERE id = $1', [second.id]);
    expect(row?.display_name).not.toBe('Second renamed');
    const audit = await sql('SELECT id FROM audit_events WHERE resource_type = $1 AND resource_id = $2', [
      'user',
      String(second.id),
    ]);
    expect(audit).toEqual([]);

    await held.client.query('COMMIT');
    expect((await firstDone).status).toBe(200);
    await rename(second.id, 'Second renamed').expect(200);
    const names = async (id: number) =>
      (await sql<{ display_name: string }>('SELECT display_name FROM users WHERE id = $1', [id]))[0]?.display_name;
    expect([await names(first.id), await names(second.id)]).toEqual(['First renamed', 'Second renamed']);
  });

  describe('a write naming many items takes more turns (one per 25)', () => {
    let four: TestApp;
    beforeAll(async () => {
      four = await startApp({ widgets: false, env: { DB_WRITE_CONCURRENCY: '4', DB_WRITE_WAIT_MS: '1000' } });
    });
    afterAll(() => four?.close());

    it('with one of four turns held, a change of 100 members waits for all four (503 busy, nothing written); one of 25 goes ahead', async () => {
      const held1 = await createUser();
      // One statement: a hundred concurrent connections would exhaust the server's beside other specs.
      const users = await sql<{ id: number }>(
        `INSERT INTO users (email, display_name, role_id, status_id)
         SELECT 'turns-' || gen_random_uuid() || '@example.com', 'Turns member', $1, $2 FROM generate_series(1, 100)
         RETURNING id`,
        [ROLE.viewer, USER_STATUS.active],
      );
      const [big, small] = [await createGroup(four, root), await createGroup(four, root)];
      const members = (count: number) => users.slice(0, count).map((user) => ({ user_id: user.id }));
      await caller(four, root).patch(`/v1/admin/users/${held1.id}`, { display_name: 'Warm' }).expect(200);
      await held.client.query('BEGIN');
      await held.client.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [held1.id]);
      const heldDone = caller(four, root)
        .patch(`/v1/admin/users/${held1.id}`, { display_name: 'Held' })
        .then((res) => res);
      try {
        await held.waitingFor(held.pid, 'the held write');
        const small25 = await caller(four, root).post(`/v1/admin/groups/${small}/members`, { members: members(25) });
        expect(small25.status).toBe(200);
        expect(small25.body.data.processed).toBe(25);
        const big100 = await caller(four, root).post(`/v1/admin/groups/${big}/members`, { members: members(100) });
        expect(big100.status).toBe(503);
        expect(big100.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { reason: 'busy' } });
        // An identity provider's PATCH naming the same 100 members takes the same four turns.
        const pushed = await scim(four, root).patch(`/Groups/${big}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: 'members', value: users.map((user) => ({ value: String(user.id) })) }],
        });
        expect(pushed.status).toBe(503);
        expect(pushed.body).toMatchObject(scimError(503));
        expect(await sql('SELECT id FROM group_memberships WHERE group_id = $1', [big])).toEqual([]);
      } finally {
        await held.client.query('COMMIT');
      }
      expect((await heldDone).status).toBe(200);
      const again = await caller(four, root).post(`/v1/admin/groups/${big}/members`, { members: members(100) });
      expect(again.status).toBe(200);
      expect(again.body.data.processed).toBe(100);
    });
  });
});
