import { actor, createUser, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { OwnRedis } from '../support/redis-server.js';
import { caller } from '../support/requests.js';

describe('two instances sharing PostgreSQL and Redis', () => {
  let a: TestApp;
  let b: TestApp;
  let root: { user: TestUser; auth: string };
  beforeAll(async () => {
    [a, b] = await Promise.all([startApp({ widgets: false }), startApp({ widgets: false })]);
    root = await actor('super_admin');
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  it('a write on one is read fresh on the other at once, for every cached resource', async () => {
    const user = await createUser();
    const device = await createDevice();
    const authority = await createAuthority(device.id, user.id);
    // Warm b's view of each record from the shared cache.
    await caller(b, root).get(`/v1/admin/users/${user.id}`).expect(200);
    await caller(b, root).get(`/v1/admin/devices/${device.id}`).expect(200);
    await caller(b, root).get(`/v1/admin/authorities/${authority}`).expect(200);
    expect((await caller(b, root).get(`/v1/admin/users/${user.id}`).expect(200)).body.meta.cache).toBe('hit');

    await caller(a, root).patch(`/v1/admin/users/${user.id}`, { display_name: 'Written on A' }).expect(200);
    await caller(a, root).patch(`/v1/admin/devices/${device.id}`, { name: 'Renamed on A' }).expect(200);
    await caller(a, root).post(`/v1/admin/authorities/${authority}/deactivate`).expect(200);

    const readUser = await caller(b, root).get(`/v1/admin/users/${user.id}`).expect(200);
    expect(readUser.body.data.display_name).toBe('Written on A');
    expect(readUser.body.meta.cache).toBe('hit');
    expect((await caller(b, root).get(`/v1/admin/devices/${device.id}`).expect(200)).body.data.name).toBe(
      'Renamed on A',
    );
    expect((await caller(b, root).get(`/v1/admin/authorities/${authority}`).expect(200)).body.data.is_active).toBe(
      false,
    );
  });

  it('a session revoked on one is rejected by the other on the very next request', async () => {
    const victim = await actor('admin');
    await caller(b, victim).get('/v1/admin/users?page_size=1').expect(200);
    await caller(a, root).delete(`/v1/admin/users/${victim.user.id}`).expect(200);
    expect((await caller(b, victim).get('/v1/admin/users?page_size=1').expect(401)).body.error.code).toBe(
      'AUTH_SESSION_INVALID',
    );
  });
});

describe('Redis paused and killed under the real routes', () => {
  let redis: OwnRedis;
  let t: TestApp;
  let root: { user: TestUser; auth: string };
  beforeAll(async () => {
    redis = await OwnRedis.start();
    t = await startApp({ widgets: false, redisUrl: redis.url });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await t.close();
    await redis.stop();
  });

  it('every route keeps working from the database, and nothing written during the outage is read stale after', async () => {
    const user = await createUser();
    const device = await createDevice();
    await caller(t, root).get(`/v1/admin/users/${user.id}`).expect(200);
    expect((await caller(t, root).get(`/v1/admin/users/${user.id}`).expect(200)).body.meta.cache).toBe('hit');

    redis.pause();
    const during = await caller(t, root).get(`/v1/admin/users/${user.id}`).expect(200);
    expect(during.body.meta.cache).toBe('bypass');
    await caller(t, root)
      .patch(`/v1/admin/users/${user.id}`, { display_name: 'Changed during the outage' })
      .expect(200);
    await caller(t, root).post('/v1/admin/authorities', { device_id: device.id, user_id: user.id }).expect(201);
    await caller(t, root).get(`/v1/admin/message-read-state/counts?user_id=${user.id}`).expect(200);
    await caller(t, root).get(`/v1/admin/devices/${device.id}`).expect(200);
    // A fresh token works too: the auth context comes from the database.
    const other = await actor('viewer');
    await caller(t, other).get('/v1/admin/users?page_size=1').expect(200);

    redis.resume();
    let after = await caller(t, root).get(`/v1/admin/users/${user.id}`).expect(200);
    for (let attempt = 0; attempt < 20 && after.body.meta.cache === 'bypass'; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await caller(t, root).get(`/v1/admin/users/${user.id}`).expect(200);
    }
    expect(after.body.data.display_name).toBe('Changed during the outage');
    expect(after.body.meta.cache).not.toBe('bypass');

    await redis.stop();
    expect((await caller(t, root).get(`/v1/admin/users/${user.id}`).expect(200)).body.data.display_name).toBe(
      'Changed during the outage',
    );
    await caller(t, root).post(`/v1/admin/users/${user.id}/suspend`).expect(200);
    expect((await caller(t, root).get(`/v1/admin/users/${user.id}`).expect(200)).body.data.status_id).toBe(3);
  }, 60_000);
});
