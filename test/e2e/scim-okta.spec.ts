import { randomUUID } from 'node:crypto';
import { actor, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { body, fixture, scim, scimError } from '../support/scim.js';

/*
 * Okta's "SCIM 2.0 Spec Test" (the Runscope suite Okta asks an integration to pass), step by step,
 * with Okta's payloads as fixtures (test/fixtures/scim/okta-*.json).
 */
describe('SCIM: the sequence of Okta’s SCIM 2.0 Spec Test (part 6.19)', () => {
  const app = useApp({ widgets: false });
  let okta: Caller;
  const userName = `runscope-${randomUUID().slice(0, 8)}@atko.com`;
  let id = '';
  beforeAll(async () => {
    okta = await actor('super_admin');
  });

  it('1. connection test: GET /Users?startIndex=1&count=2 is a ListResponse of at most 2', async () => {
    const response = await scim(app.t, okta).get('/Users?startIndex=1&count=2').expect(200);
    expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
    expect(response.headers['x-request-id']).toEqual(expect.any(String));
    expect(response.headers['cache-control']).toBe('no-store');
    const list = body(response);
    expect(list).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      startIndex: 1,
      totalResults: expect.any(Number),
    });
    expect((list.Resources as unknown[]).length).toBeLessThanOrEqual(2);
    expect(list.itemsPerPage).toBe((list.Resources as unknown[]).length);
  });

  it('2. a lookup of an unknown userName: totalResults 0', async () => {
    const response = await scim(app.t, okta)
      .get(`/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`)
      .expect(200);
    expect(body(response)).toMatchObject({ totalResults: 0, Resources: [] });
  });

  it('3. POST /Users → 201 with Location, ETag and the user as given; the row, the role and the audit event', async () => {
    const response = await scim(app.t, okta)
      .post('/Users', fixture('okta-create-user', { userName, externalId: `00u${randomUUID().slice(0, 8)}` }))
      .expect(201);
    const user = body(response);
    id = user.id as string;
    expect(user).toMatchObject({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      id: expect.stringMatching(/^\d+$/),
      userName,
      name: { givenName: 'Runscope', familyName: 'Tester' },
      displayName: 'Runscope Tester',
      active: true,
      emails: [{ value: userName, type: 'work', primary: true }],
      groups: [],
      meta: { resourceType: 'User', location: `/scim/v2/Users/${id}`, version: expect.stringMatching(/^W\/"\d+"$/) },
    });
    expect(user).not.toHaveProperty('password');
    expect(response.headers.location).toBe(`/scim/v2/Users/${id}`);
    expect(response.headers.etag).toBe((user.meta as { version: string }).version);
    const [row] = await sql<{ user_name: string; role_id: number; status_id: number; email: string }>(
      'SELECT user_name, role_id, status_id, email FROM users WHERE id = $1',
      [id],
    );
    expect(row).toEqual({ user_name: userName, role_id: 5, status_id: 2, email: userName });
    const events = await sql<{ action: string; actor_id: string }>(
      'SELECT action, actor_id FROM audit_events WHERE resource_id = $1 AND resource_type = $2 ORDER BY id',
      [id, 'user'],
    );
    expect(events.map((event) => event.action)).toEqual(['user.create', 'user.activate']);
    expect(events.every((event) => Number(event.actor_id) === okta.user.id)).toBe(true);
  });

  it('4. GET /Users/{id} answers the same user', async () => {
    const response = await scim(app.t, okta).get(`/Users/${id}`).expect(200);
    expect(body(response)).toMatchObject({ id, userName, active: true });
  });

  it('5. the lookup now finds it: totalResults 1', async () => {
    const response = await scim(app.t, okta)
      .get(`/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`)
      .expect(200);
    expect(body(response)).toMatchObject({ totalResults: 1, Resources: [{ id, userName }] });
  });

  it('6. the same user again: 409 uniqueness, and nothing written', async () => {
    const [{ count: before } = { count: 0 }] = await sql<{ count: number }>('SELECT count(*)::int AS count FROM users');
    const response = await scim(app.t, okta)
      .post('/Users', fixture('okta-create-user', { userName, externalId: `00u${randomUUID().slice(0, 8)}` }))
      .expect(409);
    expect(body(response)).toEqual(scimError(409, 'uniqueness'));
    const [{ count: after } = { count: 0 }] = await sql<{ count: number }>(
      'SELECT count(*)::int AS count FROM users WHERE lower(email) = lower($1)',
      [userName],
    );
    expect(after).toBe(1);
    expect(before).toBeGreaterThan(0);
  });

  it('7. the lookup is case-insensitive', async () => {
    const response = await scim(app.t, okta)
      .get(`/Users?filter=${encodeURIComponent(`userName eq "${userName.toUpperCase()}"`)}`)
      .expect(200);
    expect(body(response)).toMatchObject({ totalResults: 1, Resources: [{ id }] });
  });

  it('8. an unknown id (Okta sends a random UUID) is 404 with a detail', async () => {
    const response = await scim(app.t, okta).get(`/Users/${randomUUID()}`).expect(404);
    expect(response.headers['content-type']).toMatch(/^application\/scim\+json/);
    expect(body(response)).toEqual(scimError(404));
    await scim(app.t, okta).get('/Users/999999999999').expect(404);
  });

  it('9. a bad token is 401 in SCIM’s error schema', async () => {
    const response = await scim(app.t, { auth: 'Bearer not-a-token' }).get('/Users?count=1').expect(401);
    expect(body(response)).toEqual(scimError(401));
  });

  it('10. application/json is accepted as well as application/scim+json', async () => {
    const other = `runscope-${randomUUID().slice(0, 8)}@atko.com`;
    const response = await scim(app.t, okta, 'application/json')
      .post('/Users', fixture('okta-create-user', { userName: other, externalId: `00u${randomUUID().slice(0, 8)}` }))
      .expect(201);
    expect(body(response)).toMatchObject({ userName: other });
  });

  it('11. PUT (apps built with Okta’s wizard) replaces the attributes; the id in the body is the same', async () => {
    const response = await scim(app.t, okta)
      .put(`/Users/${id}`, fixture('okta-put-user', { id, userName }))
      .expect(200);
    expect(body(response)).toMatchObject({ id, displayName: 'Runscope Renamed', name: { familyName: 'Renamed' } });
    const [row] = await sql<{ display_name: string }>('SELECT display_name FROM users WHERE id = $1', [id]);
    expect(row?.display_name).toBe('Runscope Renamed');
  });

  it('12. deactivation: PATCH active false suspends the user and revokes its sessions', async () => {
    await sql("INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour')", [id]);
    const response = await scim(app.t, okta).patch(`/Users/${id}`, fixture('okta-deactivate')).expect(200);
    expect(body(response)).toMatchObject({ id, active: false });
    const [row] = await sql<{ status_id: number; live: number }>(
      `SELECT status_id, (SELECT count(*)::int FROM auth_sessions s WHERE s.user_id = users.id AND s.revoked_at IS NULL) AS live
        FROM users WHERE id = $1`,
      [id],
    );
    expect(row).toEqual({ status_id: 3, live: 0 });
    // Again: nothing to change, 200 and no new audit event.
    const [{ count: events } = { count: 0 }] = await sql<{ count: number }>(
      "SELECT count(*)::int AS count FROM audit_events WHERE resource_id = $1 AND resource_type = 'user'",
      [id],
    );
    await scim(app.t, okta).patch(`/Users/${id}`, fixture('okta-deactivate')).expect(200);
    const [{ count: again } = { count: 0 }] = await sql<{ count: number }>(
      "SELECT count(*)::int AS count FROM audit_events WHERE resource_id = $1 AND resource_type = 'user'",
      [id],
    );
    expect(again).toBe(events);
  });
});
