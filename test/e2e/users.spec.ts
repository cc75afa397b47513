import { randomUUID } from 'node:crypto';
import { verifyPin } from '../../src/users/pin.js';
import { actor, createUser, tokenFor, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';

const email = (tag = 'u'): string => `${tag}-${randomUUID().slice(0, 12)}@Example.com`;

describe('users (part 6.1)', () => {
  let t: TestApp;
  let root: { user: TestUser; auth: string };
  let admin: { user: TestUser; auth: string };
  beforeAll(async () => {
    t = await startApp();
    root = await actor('super_admin');
    admin = await actor('admin');
  });
  afterAll(() => t.close());

  const as = (who: { auth: string }) => caller(t, who);

  async function create(body: Record<string, unknown> = {}): Promise<Record<string, unknown> & { id: number }> {
    const response = await as(root)
      .post('/v1/admin/users', { email: email(), display_name: 'Ana Silva', role_id: 4, ...body })
      .expect(201);
    return response.body.data as Record<string, unknown> & { id: number };
  }

  const auditOf = (id: number) =>
    sql<{ action: string; actor_id: number; reason: string | null; changes: Record<string, unknown> }>(
      'SELECT action, actor_id, reason, changes FROM audit_events WHERE resource_type = $1 AND resource_id = $2 ORDER BY id',
      ['user', String(id)],
    );

  describe('POST /users', () => {
    it('creates a pending user: 201, Location, ETag, the contract fields, an audit event', async () => {
      const address = email('create');
      const response = await as(root)
        .post('/v1/admin/users', { email: address, display_name: 'Ana Silva', role_id: 3, phone: '+351912345678' })
        .expect(201);
      const user = response.body.data;
      expect(Object.keys(user)).toEqual([
        'id',
        'email',
        'display_name',
        'phone',
        'user_name',
        'external_id',
        'role_id',
        'effective_role_id',
        'status_id',
        'pin_set',
        'pin_reset_at',
        'created_at',
        'updated_at',
        'created_by',
        'updated_by',
        'is_deleted',
        'deleted_at',
        'deleted_by',
      ]);
      expect(user).toMatchObject({
        email: address,
        display_name: 'Ana Silva',
        phone: '+351912345678',
        role_id: 3,
        status_id: 1,
        pin_set: false,
        pin_reset_at: null,
        created_by: root.user.id,
        updated_by: root.user.id,
        is_deleted: false,
      });
      expect(user.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(response.headers.location).toBe(`/v1/admin/users/${user.id}`);
      expect(response.headers.etag).toBe('"1"');
      expect(await auditOf(user.id)).toEqual([
        {
          action: 'user.create',
          actor_id: root.user.id,
          reason: null,
          changes: {
            email: [null, address],
            display_name: [null, 'Ana Silva'],
            phone: [null, '+351912345678'],
            role_id: [null, 3],
            status_id: [null, 1],
          },
        },
      ]);
    });

    it.each([
      [{ email: 'not-an-email' }, 'email'],
      [{ email: `${'x'.repeat(250)}@example.com` }, 'email'],
      [{ display_name: '' }, 'display_name'],
      [{ display_name: '   ' }, 'display_name'],
      [{ display_name: 'x'.repeat(101) }, 'display_name'],
      [{ phone: '0912345678' }, 'phone'],
      [{ role_id: 'admin' }, 'role_id'],
      [{ id: 5 }, 'id'],
      [{ is_deleted: true }, 'is_deleted'],
      [{ created_by: 1 }, 'created_by'],
      [{ owner: true }, 'owner'],
      [{ status_id: 2 }, 'status_id'],
    ])('400 VALIDATION_FAILED for %j, naming %s, and writes nothing', async (patch, field) => {
      const address = email('invalid');
      const response = await as(root)
        .post('/v1/admin/users', { email: address, display_name: 'X', role_id: 4, ...patch })
        .expect(400);
      expect(response.body.error.code).toBe('VALIDATION_FAILED');
      expect(response.body.error.details.fields).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
      expect(await sql('SELECT id FROM users WHERE lower(email) = lower($1)', [address])).toEqual([]);
    });

    it('400 for a missing body', async () => {
      const response = await as(root).post('/v1/admin/users').expect(400);
      expect(response.body.error.code).toBe('VALIDATION_FAILED');
    });

    it('a missing field is one problem (rule required), and the message names the other fields in trouble', async () => {
      const response = await as(root).post('/v1/admin/users', { display_name: '', role_id: 'x' }).expect(400);
      const fields = response.body.error.details.fields as { field: string; rule: string }[];
      expect(fields.filter((problem) => problem.field === 'email')).toEqual([
        { field: 'email', rule: 'required', message: 'email is required' },
      ]);
      expect(response.body.error.message).toBe('email is required; also the fields display_name, role_id');
    });

    it('404 ROLE_NOT_FOUND for an unknown role', async () => {
      const response = await as(root)
        .post('/v1/admin/users', { email: email(), display_name: 'X', role_id: 99 })
        .expect(404);
      expect(response.body.error).toMatchObject({ code: 'ROLE_NOT_FOUND', details: { role_id: 99 } });
    });

    it('409 USER_EMAIL_TAKEN case-insensitively, also for a deleted user', async () => {
      const existing = await create();
      const response = await as(root)
        .post('/v1/admin/users', { email: String(existing.email).toUpperCase(), display_name: 'Y', role_id: 4 })
        .expect(409);
      expect(response.body.error).toMatchObject({
        code: 'USER_EMAIL_TAKEN',
        details: { email: String(existing.email).toUpperCase() },
      });
      await as(root).delete(`/v1/admin/users/${existing.id}`).expect(200);
      await as(root).post('/v1/admin/users', { email: existing.email, display_name: 'Y', role_id: 4 }).expect(409);
    });

    it('403 ROLE_ESCALATION_FORBIDDEN when an admin creates an admin or super_admin', async () => {
      for (const role_id of [1, 2]) {
        const response = await as(admin)
          .post('/v1/admin/users', { email: email(), display_name: 'X', role_id })
          .expect(403);
        expect(response.body.error).toMatchObject({
          code: 'ROLE_ESCALATION_FORBIDDEN',
          details: { target_role_id: role_id },
        });
      }
      await as(admin).post('/v1/admin/users', { email: email(), display_name: 'X', role_id: 3 }).expect(201);
      await as(root).post('/v1/admin/users', { email: email(), display_name: 'X', role_id: 2 }).expect(201);
    });
  });

  describe('user_name and external_id (v1.3, the names SCIM keeps; set by hand too)', () => {
    it('set on create and by PATCH, audited, unique (case-insensitive user name; one presented name per user), filtered and searched', async () => {
      const name = `Ana.${randomUUID().slice(0, 8)}`;
      const external = `00u${randomUUID().slice(0, 8)}`;
      const user = await create({ user_name: name, external_id: external });
      expect(user).toMatchObject({ user_name: name, external_id: external });
      expect((await auditOf(user.id))[0]?.changes).toMatchObject({
        user_name: [null, name],
        external_id: [null, external],
      });
      const taken = await as(root)
        .post('/v1/admin/users', { email: email(), display_name: 'Other', role_id: 4, user_name: name.toUpperCase() })
        .expect(409);
      expect(taken.body.error).toMatchObject({ code: 'USER_NAME_TAKEN', details: { user_name: name.toUpperCase() } });
      const externalTaken = await as(root)
        .post('/v1/admin/users', { email: email(), display_name: 'Other', role_id: 4, external_id: external })
        .expect(409);
      expect(externalTaken.body.error).toMatchObject({
        code: 'EXTERNAL_ID_TAKEN',
        details: { external_id: external, resource_type: 'user' },
      });
      // A user without a user name goes by its email: another may not take that as its user name.
      const plain = await create();
      const presented = await as(root)
        .patch(`/v1/admin/users/${user.id}`, { user_name: String(plain.email).toLowerCase() })
        .expect(409);
      expect(presented.body.error.code).toBe('USER_NAME_TAKEN');
      const listed = await as(root).get(`/v1/admin/users?external_id=${external}`).expect(200);
      expect(listed.body.data.map((row: { id: number }) => row.id)).toEqual([user.id]);
      const searched = await as(root)
        .get(`/v1/admin/users?q=${encodeURIComponent(name.toLowerCase())}`)
        .expect(200);
      expect(searched.body.data.map((row: { id: number }) => row.id)).toContain(user.id);
      const cleared = await as(root)
        .patch(`/v1/admin/users/${user.id}`, { user_name: null, external_id: null })
        .expect(200);
      expect(cleared.body.data).toMatchObject({ user_name: null, external_id: null });
      expect((await auditOf(user.id)).at(-1)?.changes).toEqual({
        user_name: [name, null],
        external_id: [external, null],
      });
    });

    it('bad values are 400 with the field named: blank, too long, control characters, spaces at the ends', async () => {
      for (const [field, value] of [
        ['user_name', ''],
        ['user_name', 'x'.repeat(255)],
        ['user_name', 'a\tb'],
        ['user_name', ' ana'],
        ['external_id', 'x'.repeat(256)],
        ['external_id', 'id\n'],
      ] as const) {
        const response = await as(root)
          .post('/v1/admin/users', { email: email(), display_name: 'Bad', role_id: 4, [field]: value })
          .expect(400);
        expect([field, response.body.error.details.fields[0].field]).toEqual([field, field]);
      }
    });
  });

  describe('GET /users/{id}', () => {
    it('is served from the cache after the first read, with the ETag', async () => {
      const user = await create();
      const first = await as(root).get(`/v1/admin/users/${user.id}`).expect(200);
      const second = await as(root).get(`/v1/admin/users/${user.id}`).expect(200);
      expect(first.body.meta.cache).toMatch(/^(miss|hit)$/);
      expect(second.body.meta.cache).toBe('hit');
      expect(second.body.data).toEqual(user);
      expect(second.headers.etag).toBe('"1"');
    });

    it('404 USER_NOT_FOUND for an unknown id; 400 for a bad id or query', async () => {
      const missing = await as(root).get('/v1/admin/users/987654321').expect(404);
      expect(missing.body.error).toEqual({
        code: 'USER_NOT_FOUND',
        message: 'User 987654321 does not exist',
        details: { user_id: 987654321 },
      });
      expect((await as(root).get('/v1/admin/users/abc').expect(400)).body.error.details.fields[0].field).toBe('id');
      expect((await as(root).get('/v1/admin/users/1?include_deleted=yes').expect(400)).body.error.code).toBe(
        'VALIDATION_FAILED',
      );
      expect(
        (await as(root).get('/v1/admin/users/1?expand=all').expect(400)).body.error.details.fields[0],
      ).toMatchObject({ field: 'expand', rule: 'unknown' });
    });

    it('hides a deleted user unless include_deleted=true', async () => {
      const user = await create();
      await as(root).delete(`/v1/admin/users/${user.id}`).expect(200);
      await as(root).get(`/v1/admin/users/${user.id}`).expect(404);
      const shown = await as(root).get(`/v1/admin/users/${user.id}?include_deleted=true`).expect(200);
      expect(shown.body.data).toMatchObject({ id: user.id, is_deleted: true, deleted_by: root.user.id });
    });
  });

  describe('GET /users', () => {
    it('filters by status_id and role_id, searches email and display_name, sorts, hides deleted', async () => {
      const tag = randomUUID().slice(0, 8);
      const a = await create({ email: `zed-${tag}@example.com`, display_name: `Alpha ${tag}`, role_id: 3 });
      const b = await create({ email: `amy-${tag}@example.com`, display_name: `Beta ${tag}`, role_id: 4 });
      const c = await create({ email: `bob-${tag}@example.com`, display_name: `Gamma ${tag}`, role_id: 4 });
      await as(root).post(`/v1/admin/users/${b.id}/activate`).expect(200);
      await as(root).delete(`/v1/admin/users/${c.id}`).expect(200);
      const ids = async (query: string): Promise<number[]> =>
        ((await as(root).get(`/v1/admin/users?q=${tag}&${query}`).expect(200)).body.data as { id: number }[]).map(
          (user) => user.id,
        );
      expect(await ids('')).toEqual([a.id, b.id]);
      expect(await ids('include_deleted=true')).toEqual([a.id, b.id, c.id]);
      expect(await ids('status_id=2')).toEqual([b.id]);
      expect(await ids('role_id=4&include_deleted=true')).toEqual([b.id, c.id]);
      expect(await ids('sort=email:asc&include_deleted=true')).toEqual([b.id, c.id, a.id]);
      expect(await ids('sort=display_name:desc')).toEqual([b.id, a.id]);
      const page = await as(root).get(`/v1/admin/users?q=${tag.toUpperCase()}&page_size=1&page=2`).expect(200);
      expect(page.body.data).toHaveLength(1);
      expect(page.body.meta).toMatchObject({ page: 2, page_size: 1, total: 2, total_exact: true });
    });

    it('400 for an unknown filter, a bad sort field, a non-integer filter and page_size over 100', async () => {
      for (const query of ['owner=1', 'sort=phone:asc', 'status_id=active', 'page_size=101']) {
        const response = await as(root).get(`/v1/admin/users?${query}`).expect(400);
        expect(response.body.error.code).toBe('VALIDATION_FAILED');
      }
    });
  });

  describe('PATCH /users/{id}', () => {
    it('changes fields, bumps the version, records the changes and is read fresh at once', async () => {
      const user = await create({ phone: '+14155550100' });
      await as(root).get(`/v1/admin/users/${user.id}`).expect(200);
      const response = await as(root)
        .patch(`/v1/admin/users/${user.id}`, { display_name: 'Ana Maria', phone: null })
        .expect(200);
      expect(response.body.data).toMatchObject({ display_name: 'Ana Maria', phone: null, updated_by: root.user.id });
      expect(response.headers.etag).toBe('"2"');
      const read = await as(root).get(`/v1/admin/users/${user.id}`).expect(200);
      expect(read.body.data.display_name).toBe('Ana Maria');
      expect(read.headers.etag).toBe('"2"');
      expect((await auditOf(user.id)).at(-1)).toEqual({
        action: 'user.update',
        actor_id: root.user.id,
        reason: null,
        changes: { display_name: ['Ana Silva', 'Ana Maria'], phone: ['+14155550100', null] },
      });
    });

    it('honours If-Match: a stale ETag is 412 and changes nothing', async () => {
      const user = await create();
      const stale = await as(root)
        .patch(`/v1/admin/users/${user.id}`, { display_name: 'Nope' })
        .set('If-Match', '"7"')
        .expect(412);
      expect(stale.body.error).toEqual({
        code: 'PRECONDITION_FAILED',
        message: 'If-Match does not match the current version',
        details: { current_etag: '"1"' },
      });
      expect(await sql('SELECT display_name, version FROM users WHERE id = $1', [user.id])).toEqual([
        { display_name: 'Ana Silva', version: 1 },
      ]);
      await as(root).patch(`/v1/admin/users/${user.id}`, { display_name: 'Yes' }).set('If-Match', '"1"').expect(200);
    });

    it('an empty PATCH changes nothing: same version, no audit event', async () => {
      const user = await create();
      const response = await as(root).patch(`/v1/admin/users/${user.id}`, {}).expect(200);
      expect(response.headers.etag).toBe('"1"');
      expect((await auditOf(user.id)).map((event) => event.action)).toEqual(['user.create']);
    });

    it('400 for null in a required field or an audit field; 409 for a taken email; 404 for a deleted user', async () => {
      const user = await create();
      const other = await create();
      expect(
        (await as(root).patch(`/v1/admin/users/${user.id}`, { email: null }).expect(400)).body.error.details.fields[0]
          .field,
      ).toBe('email');
      expect(
        (await as(root).patch(`/v1/admin/users/${user.id}`, { updated_at: '2026-01-01T00:00:00Z' }).expect(400)).body
          .error.details.fields[0].field,
      ).toBe('updated_at');
      expect(
        (
          await as(root)
            .patch(`/v1/admin/users/${user.id}`, { email: String(other.email).toLowerCase() })
            .expect(409)
        ).body.error.code,
      ).toBe('USER_EMAIL_TAKEN');
      // Changing only the case of one's own email is not a conflict.
      await as(root)
        .patch(`/v1/admin/users/${user.id}`, { email: String(user.email).toUpperCase() })
        .expect(200);
      await as(root).delete(`/v1/admin/users/${other.id}`).expect(200);
      expect(
        (await as(root).patch(`/v1/admin/users/${other.id}`, { display_name: 'Z' }).expect(404)).body.error.code,
      ).toBe('USER_NOT_FOUND');
    });

    it('role changes: the actor must outrank the old and the new role; a super_admin gives any', async () => {
      const operator = await create({ role_id: 3 });
      const promoted = await as(admin).patch(`/v1/admin/users/${operator.id}`, { role_id: 2 }).expect(403);
      expect(promoted.body.error).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
      await as(admin).patch(`/v1/admin/users/${operator.id}`, { role_id: 4 }).expect(200);
      const otherAdmin = await create({ role_id: 2 });
      expect(
        (await as(admin).patch(`/v1/admin/users/${otherAdmin.id}`, { role_id: 4 }).expect(403)).body.error,
      ).toMatchObject({ code: 'ROLE_ESCALATION_FORBIDDEN', details: { target_role_id: 2 } });
      // An admin does not outrank another admin: not even its display name (part 5, role rank).
      await as(admin).patch(`/v1/admin/users/${otherAdmin.id}`, { display_name: 'Renamed' }).expect(403);
      expect(
        (await as(admin).patch(`/v1/admin/users/${root.user.id}`, { display_name: 'Hacked' }).expect(403)).body.error
          .code,
      ).toBe('ROLE_ESCALATION_FORBIDDEN');
      await as(root).patch(`/v1/admin/users/${otherAdmin.id}`, { role_id: 4 }).expect(200);
      expect(
        (await as(root).patch(`/v1/admin/users/${operator.id}`, { role_id: 42 }).expect(404)).body.error.code,
      ).toBe('ROLE_NOT_FOUND');
    });
  });

  describe('DELETE and restore', () => {
    it('deletes (200), then 204; restores (200), then 204; revokes sessions; audits both', async () => {
      const target = await createUser({ role: 'viewer' });
      const token = await tokenFor(target);
      const deleted = await as(root).delete(`/v1/admin/users/${target.id}`).expect(200);
      expect(deleted.body.data).toMatchObject({ id: target.id, is_deleted: true, deleted_by: root.user.id });
      expect(deleted.body.data.deleted_at).toEqual(expect.any(String));
      const again = await as(root).delete(`/v1/admin/users/${target.id}`).expect(204);
      expect(again.text).toBe('');
      expect(
        await sql('SELECT count(*)::int AS live FROM auth_sessions WHERE user_id = $1 AND revoked_at IS NULL', [
          target.id,
        ]),
      ).toEqual([{ live: 0 }]);
      await t.http().get('/v1/admin/users').set('Authorization', `Bearer ${token}`).expect(401);
      expect((await as(root).post(`/v1/admin/users/${target.id}/activate`).expect(404)).body.error.code).toBe(
        'USER_NOT_FOUND',
      );
      const restored = await as(root).post(`/v1/admin/users/${target.id}/restore`).expect(200);
      expect(restored.body.data).toMatchObject({ is_deleted: false, deleted_at: null, deleted_by: null });
      await as(root).post(`/v1/admin/users/${target.id}/restore`).expect(204);
      expect((await auditOf(target.id)).map((event) => event.action)).toEqual(['user.delete', 'user.restore']);
      const sessionEvents = await sql(
        'SELECT action, reason FROM audit_events WHERE resource_type = $1 AND actor_id = $2 AND changes ? $3 AND action = $4 AND reason = $5',
        ['session', root.user.id, 'revoked_at', 'session.revoke', 'user deleted'],
      );
      expect(sessionEvents.length).toBeGreaterThanOrEqual(1);
      // A restored user must sign in again: the revoked session stays revoked.
      await t.http().get('/v1/admin/users').set('Authorization', `Bearer ${token}`).expect(401);
    });

    it('422 SELF_ACTION_FORBIDDEN for deleting oneself; 412 for a stale If-Match; 404 for an unknown user', async () => {
      const self = await actor('admin');
      const response = await as(self).delete(`/v1/admin/users/${self.user.id}`).expect(422);
      expect(response.body.error).toMatchObject({
        code: 'SELF_ACTION_FORBIDDEN',
        details: { action: 'delete', user_id: self.user.id },
      });
      const user = await create();
      await as(root).delete(`/v1/admin/users/${user.id}`).set('If-Match', '"9"').expect(412);
      expect(await sql('SELECT is_deleted FROM users WHERE id = $1', [user.id])).toEqual([{ is_deleted: false }]);
      await as(root).delete('/v1/admin/users/987654321').expect(404);
    });
  });

  describe('lifecycle actions', () => {
    it('activate: pending → active, then 409 INVALID_STATE_TRANSITION', async () => {
      const user = await create();
      const activated = await as(root).post(`/v1/admin/users/${user.id}/activate`).expect(200);
      expect(activated.body.data.status_id).toBe(2);
      expect(activated.headers.etag).toBe('"2"');
      const again = await as(root).post(`/v1/admin/users/${user.id}/activate`).expect(409);
      expect(again.body.error).toMatchObject({
        code: 'INVALID_STATE_TRANSITION',
        details: { from: 'active', action: 'activate' },
      });
      expect((await auditOf(user.id)).at(-1)).toMatchObject({
        action: 'user.activate',
        changes: { status_id: [1, 2] },
      });
    });

    it('suspend: active → suspended with the reason audited; again is 409; suspended → active again', async () => {
      const user = await create();
      await as(root).post(`/v1/admin/users/${user.id}/activate`).expect(200);
      const suspended = await as(root)
        .post(`/v1/admin/users/${user.id}/suspend`, { reason: 'fraud check' })
        .expect(200);
      expect(suspended.body.data.status_id).toBe(3);
      expect((await auditOf(user.id)).at(-1)).toMatchObject({
        action: 'user.suspend',
        reason: 'fraud check',
        changes: { status_id: [2, 3] },
      });
      const again = (await as(root).post(`/v1/admin/users/${user.id}/suspend`).expect(409)).body.error;
      expect(again.message).toBe('A suspended user cannot be suspended');
      expect(again.details).toEqual({
        from: 'suspended',
        action: 'suspend',
      });
      await as(root).post(`/v1/admin/users/${user.id}/activate`).expect(200);
    });

    it('suspend refuses oneself (422), unknown body fields (400) and a super_admin target for an admin (403)', async () => {
      const self = await actor('admin');
      expect((await as(self).post(`/v1/admin/users/${self.user.id}/suspend`).expect(422)).body.error.code).toBe(
        'SELF_ACTION_FORBIDDEN',
      );
      const user = await create();
      expect(
        (await as(root).post(`/v1/admin/users/${user.id}/suspend`, { reason: 'x', until: 'later' }).expect(400)).body
          .error.details.fields[0],
      ).toMatchObject({ field: 'until', rule: 'unknown' });
      expect((await as(admin).post(`/v1/admin/users/${root.user.id}/suspend`).expect(403)).body.error.code).toBe(
        'ROLE_ESCALATION_FORBIDDEN',
      );
    });

    it('actions take no options: a body with a property is 400, an empty JSON body is fine', async () => {
      const user = await create();
      await as(root).post(`/v1/admin/users/${user.id}/activate`, { force: true }).expect(400);
      await t
        .http()
        .post(`/v1/admin/users/${user.id}/activate`)
        .set('Authorization', root.auth)
        .set('Content-Type', 'application/json')
        .send('')
        .expect(200);
    });

    it('reset-pin: returns a 6-digit PIN once, stores only its hash, audits without it', async () => {
      const user = await create();
      const response = await as(root).post(`/v1/admin/users/${user.id}/reset-pin`).expect(200);
      const { temporary_pin: pin, pin_reset_at: resetAt, user_id: userId } = response.body.data;
      expect(pin).toMatch(/^\d{6}$/);
      expect(userId).toBe(user.id);
      expect(resetAt).toEqual(expect.any(String));
      expect(response.headers.etag).toBe('"2"');
      const [row] = await sql<{ pin_hash: string }>('SELECT pin_hash FROM users WHERE id = $1', [user.id]);
      expect(row?.pin_hash).not.toContain(pin);
      expect(await verifyPin(pin, row?.pin_hash ?? '')).toBe(true);
      const detail = await as(root).get(`/v1/admin/users/${user.id}`).expect(200);
      expect(detail.body.data).toMatchObject({ pin_set: true, pin_reset_at: resetAt });
      expect(JSON.stringify(detail.body)).not.toContain(pin);
      const events = await auditOf(user.id);
      expect(events.at(-1)).toMatchObject({
        action: 'user.reset_pin',
        changes: { pin_set: [false, true], pin_reset_at: [null, resetAt] },
      });
      expect(JSON.stringify(events)).not.toContain(pin);
    });

    it('reset-pin on a suspended user is 409', async () => {
      const user = await create();
      await as(root).post(`/v1/admin/users/${user.id}/suspend`).expect(200);
      expect((await as(root).post(`/v1/admin/users/${user.id}/reset-pin`).expect(409)).body.error.details).toEqual({
        from: 'suspended',
        action: 'reset-pin',
      });
    });
  });

  describe('permissions per route', () => {
    it('an operator reads users but cannot create, update, delete, suspend or reset PINs', async () => {
      const operator = await actor('operator');
      const user = await create();
      await as(operator).get(`/v1/admin/users/${user.id}`).expect(200);
      const denied: [() => Promise<{ body: { error: { details: unknown } } }>, string][] = [
        [() => as(operator).post('/v1/admin/users', { email: email(), display_name: 'X', role_id: 4 }), 'users.create'],
        [() => as(operator).patch(`/v1/admin/users/${user.id}`, { display_name: 'X' }), 'users.update'],
        [() => as(operator).delete(`/v1/admin/users/${user.id}`), 'users.delete'],
        [() => as(operator).post(`/v1/admin/users/${user.id}/restore`), 'users.restore'],
        [() => as(operator).post(`/v1/admin/users/${user.id}/activate`), 'users.activate'],
        [() => as(operator).post(`/v1/admin/users/${user.id}/suspend`), 'users.suspend'],
        [() => as(operator).post(`/v1/admin/users/${user.id}/reset-pin`), 'users.reset_pin'],
      ];
      for (const [call, permission] of denied) {
        const response = await call();
        expect(response.body.error.details).toEqual({ permission });
      }
      expect(await sql('SELECT version FROM users WHERE id = $1', [user.id])).toEqual([{ version: 1 }]);
    });
  });
});
