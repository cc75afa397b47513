import { randomUUID } from 'node:crypto';
import { IdempotencyKeysRepository } from '../../src/platform/idempotency/idempotency-keys.repository.js';
import { actor, createUser, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';

describe('Idempotency-Key (part 8)', () => {
  let t: TestApp;
  let root: { user: TestUser; auth: string };
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const post = (path: string, key: string, body?: object, who = root) => {
    const request = t.http().post(path).set('Authorization', who.auth).set('Idempotency-Key', key);
    return body === undefined ? request : request.send(body);
  };
  const usersWith = async (email: string): Promise<number> =>
    (await sql<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE lower(email) = lower($1)', [email]))[0]?.n ??
    -1;

  it('5 replays of one key and body give the same status and body and one side effect', async () => {
    const key = randomUUID();
    const body = { email: `idem-${key}@example.com`, display_name: 'Idem', role_id: 4 };
    const first = await post('/v1/admin/users', key, body).expect(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const again = await post('/v1/admin/users', key, { role_id: 4, display_name: 'Idem', email: body.email }).expect(
        201,
      );
      expect(again.text).toBe(first.text);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers.location).toBe(first.headers.location);
      expect(again.headers.etag).toBe(first.headers.etag);
    }
    expect(await usersWith(body.email)).toBe(1);
    expect(
      await sql("SELECT count(*)::int AS n FROM audit_events WHERE action = 'user.create' AND resource_id = $1", [
        String(first.body.data.id),
      ]),
    ).toEqual([{ n: 1 }]);
  });

  it('the same key with a different body is 422 IDEMPOTENCY_KEY_REUSED and does nothing', async () => {
    const key = randomUUID();
    await post('/v1/admin/users', key, { email: `a-${key}@example.com`, display_name: 'A', role_id: 4 }).expect(201);
    const other = `b-${key}@example.com`;
    const reused = await post('/v1/admin/users', key, { email: other, display_name: 'B', role_id: 4 }).expect(422);
    expect(reused.body.error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', details: { idempotency_key: key } });
    expect(await usersWith(other)).toBe(0);
  });

  it('20 concurrent requests with one key execute once', async () => {
    const key = randomUUID();
    const body = { email: `race-${key}@example.com`, display_name: 'Race', role_id: 4 };
    const responses = await Promise.all(Array.from({ length: 20 }, () => post('/v1/admin/users', key, body)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.every((status) => status === 201 || status === 409)).toBe(true);
    expect(
      responses.filter((response) => response.status === 201 && response.headers['idempotent-replayed'] === undefined),
    ).toHaveLength(1);
    for (const busy of responses.filter((response) => response.status === 409))
      expect(busy.body.error.code).toBe('IDEMPOTENCY_KEY_IN_PROGRESS');
    expect(await usersWith(body.email)).toBe(1);
  });

  it('a 400 is not kept: the corrected request with the same key runs', async () => {
    const key = randomUUID();
    const email = `fix-${key}@example.com`;
    await post('/v1/admin/users', key, { email, display_name: '', role_id: 4 }).expect(400);
    await post('/v1/admin/users', key, { email, display_name: 'Fixed', role_id: 4 }).expect(201);
    expect(await usersWith(email)).toBe(1);
  });

  it('keeps and replays error answers and 204s; keys are scoped to actor and path', async () => {
    const key = randomUUID();
    const existing = await createUser();
    const conflict = await post('/v1/admin/users', key, {
      email: existing.email,
      display_name: 'Dup',
      role_id: 4,
    }).expect(409);
    const replayed = await post('/v1/admin/users', key, {
      email: existing.email,
      display_name: 'Dup',
      role_id: 4,
    }).expect(409);
    expect(replayed.text).toBe(conflict.text);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    await post(`/v1/admin/users/${existing.id}/restore`, key).expect(204);
    const again = await post(`/v1/admin/users/${existing.id}/restore`, key).expect(204);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await actor('super_admin');
    const email = `scoped-${key}@example.com`;
    await post('/v1/admin/users', key, { email, display_name: 'S', role_id: 4 }, other).expect(201);
    expect(await usersWith(email)).toBe(1);
  });

  it('never stores a temporary PIN: a replayed reset-pin answers without it and mints no second PIN', async () => {
    const user = await createUser();
    const key = randomUUID();
    const first = await post(`/v1/admin/users/${user.id}/reset-pin`, key).expect(200);
    expect(first.body.data.temporary_pin).toMatch(/^\d{6}$/);
    const [stored] = await sql<{ body: string }>('SELECT body FROM idempotency_keys WHERE key = $1', [key]);
    expect(stored?.body).not.toContain(first.body.data.temporary_pin);
    const replay = await post(`/v1/admin/users/${user.id}/reset-pin`, key).expect(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data).toEqual({ ...first.body.data, temporary_pin: null });
    expect(
      await sql("SELECT count(*)::int AS n FROM audit_events WHERE action = 'user.reset_pin' AND resource_id = $1", [
        String(user.id),
      ]),
    ).toEqual([{ n: 1 }]);
  });

  it('400 for a malformed key; GET ignores keys', async () => {
    const response = await post('/v1/admin/users', 'x'.repeat(256), {
      email: `k-${randomUUID()}@example.com`,
      display_name: 'K',
      role_id: 4,
    }).expect(400);
    expect(response.body.error.details.fields[0]).toMatchObject({ field: 'Idempotency-Key' });
    await t
      .http()
      .get('/v1/admin/users?page_size=1')
      .set('Authorization', root.auth)
      .set('Idempotency-Key', 'x'.repeat(300))
      .expect(200);
  });

  it('expired keys are purged and may be used again', async () => {
    const key = randomUUID();
    const first = `old-${key}@example.com`;
    await post('/v1/admin/users', key, { email: first, display_name: 'Old', role_id: 4 }).expect(201);
    await sql("UPDATE idempotency_keys SET expires_at = now() - interval '1 minute' WHERE key = $1", [key]);
    const second = `new-${key}@example.com`;
    await post('/v1/admin/users', key, { email: second, display_name: 'New', role_id: 4 }).expect(201);
    expect(await usersWith(second)).toBe(1);
    await sql("UPDATE idempotency_keys SET expires_at = now() - interval '1 minute' WHERE key = $1", [key]);
    expect(await t.app.get(IdempotencyKeysRepository).purgeExpired()).toBeGreaterThanOrEqual(1);
    expect(await sql('SELECT count(*)::int AS n FROM idempotency_keys WHERE key = $1', [key])).toEqual([{ n: 0 }]);
  });
});
