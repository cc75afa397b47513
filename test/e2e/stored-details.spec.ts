import { jest } from '@jest/globals';
import { AuditEventsService } from '../../src/audit-events/audit-events.service.js';
import { AuthoritiesService } from '../../src/authorities/authorities.service.js';
import { DevicesService } from '../../src/authorities/devices.service.js';
import { UsersService } from '../../src/users/users.service.js';
import { actor, createUser, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';
import { withRawRedis } from '../support/redis-raw.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';

/*
 * A detail route whose handler sends its projection as stored (`detailAsStored`) answers a plain
 * hit from the authentication hook, without its handler: the response must be the one the route
 * sends (status, envelope, ETag, headers), and everything that is not the plain case must still
 * reach the route. `?include_deleted=false` (a query string) always takes the route, which makes the two
 * comparable on the same entry.
 */
describe('cached details answered before the handler', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    // A prefix of its own: its writes through the API bump table generations other specs read.
    t = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('stored-details'),
      env: { CACHE_TIMEOUT_MS: '2000' },
    });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  /** The parts of a response a client sees, without the request id. */
  const seen = (response: { status: number; body: { meta?: object }; headers: Record<string, string> }) => ({
    status: response.status,
    body: { ...response.body, meta: { ...response.body.meta, request_id: 'x' } },
    etag: response.headers.etag,
    type: response.headers['content-type'],
    cacheControl: response.headers['cache-control'],
  });

  it.each([
    ['users', UsersService, async () => (await createUser()).id],
    ['devices', DevicesService, async () => (await createDevice()).id],
    [
      'authorities',
      AuthoritiesService,
      async () => {
        const device = await createDevice({ ownerId: (await createUser({ role: 'operator' })).id });
        return (await sql<{ id: number }>('SELECT id FROM authorities WHERE device_id = $1', [device.id]))[0]?.id ?? 0;
      },
    ],
    [
      'audit-events',
      AuditEventsService,
      async () => {
        await caller(t, root).patch(`/v1/admin/users/${(await createUser()).id}`, { display_name: 'Audited' });
        return (await sql<{ id: number }>('SELECT max(id) AS id FROM audit_events'))[0]?.id ?? 0;
      },
    ],
  ] as const)(
    'GET /%s/{id}: the hook sends exactly what the route sends, without running the handler (its service is never asked)',
    async (segment, controller, make) => {
      const id = await make();
      const path = `/v1/admin/${segment}/${id}`;
      const instance: { get: () => unknown } = t.app.get(controller as never);
      const handler = jest.spyOn(instance, 'get');
      await caller(t, root).get(path).expect(200);
      handler.mockClear();
      const fast = await caller(t, root).get(path).expect(200);
      expect(handler).not.toHaveBeenCalled();
      const routed = await caller(t, root).get(`${path}?include_deleted=false`).expect(200);
      expect(handler).toHaveBeenCalledTimes(1);
      expect(seen(fast)).toEqual(seen(routed));
      expect(fast.body.meta.cache).toBe('hit');
      expect(fast.body.data.id).toBe(id);
      expect(fast.headers['x-request-id']).toBe(fast.body.meta.request_id);
      expect(fast.headers.etag).toMatch(/^"\d+"$/);
    },
  );

  it('a write is seen at once, and a deleted record is the route’s 404 (with include_deleted, the record)', async () => {
    const user = await createUser();
    const path = `/v1/admin/users/${user.id}`;
    await caller(t, root).get(path).expect(200);
    await caller(t, root).patch(path, { display_name: 'Renamed' }).expect(200);
    const read = await caller(t, root).get(path).expect(200);
    expect(read.body.data.display_name).toBe('Renamed');
    expect(read.body.meta.cache).toBe('hit');
    await caller(t, root).delete(path).expect(200);
    const gone = await caller(t, root).get(path).expect(404);
    expect(gone.body.error.code).toBe('USER_NOT_FOUND');
    expect((await caller(t, root).get(`${path}?include_deleted=true`).expect(200)).body.data.is_deleted).toBe(true);
  });

  it('an actor allowed only on the device, by an authority its context carries, is answered as stored too (same answer); one not allowed gets its 403', async () => {
    const operator = await actor('operator');
    const device = await createDevice({ ownerId: operator.user.id });
    const path = `/v1/admin/devices/${device.id}`;
    const handler = jest.spyOn(t.app.get(DevicesService), 'get');
    await caller(t, operator).get(path).expect(200);
    const again = await caller(t, operator).get(path).expect(200);
    // The first read missed and went through the route; the second is the stored hit.
    expect(handler).toHaveBeenCalledTimes(1);
    expect(again.body.meta.cache).toBe('hit');
    expect(seen(again)).toEqual(seen(await caller(t, root).get(path).expect(200)));
    const stranger = await actor('operator');
    expect((await caller(t, stranger).get(path).expect(403)).body.error.code).toBe('PERMISSION_DENIED');
  });

  it('an entry that does not read back as its record is never sent: the route replaces it', async () => {
    const user = await createUser();
    const other = await createUser();
    const path = `/v1/admin/users/${user.id}`;
    const expected = (await caller(t, root).get(path).expect(200)).body.data as unknown;
    await withRawRedis(TEST_REDIS_URL, async (redis) => {
      const stored = await redis.entryKey(testCachePrefix('stored-details'), `res:user:${user.id}`);
      const value = (await redis.get(stored)) ?? '';
      // The other user's JSON under this user's key, at a version far ahead.
      const generation = /^\d+:/.exec(value)?.[0] ?? '';
      await redis.set(stored, `${generation}999|0|${JSON.stringify({ ...(expected as object), id: other.id })}`);
    });
    const read = await caller(t, root).get(path).expect(200);
    expect(read.body.data).toEqual(expected);
    expect(read.body.meta.cache).toBe('miss');
  });

  it.each([
    ['users', UsersService, '?sort=email:asc&page_size=3'],
    ['authorities', AuthoritiesService, '?sort=id:desc&page_size=2&is_active=true'],
    ['devices', DevicesService, '?page_size=2'],
    ['audit-events', AuditEventsService, '?page_size=2&action=user.update'],
  ] as const)(
    'GET /%s: a cached page is sent as stored, with the meta of a hit, without asking the service',
    async (segment, service, query) => {
      await createDevice({ ownerId: (await createUser()).id });
      const path = `/v1/admin/${segment}${query}`;
      const instance: { list: () => unknown } = t.app.get(service as never);
      const list = jest.spyOn(instance, 'list');
      // Other specs write the same tables: a write between the two reads makes the second a miss
      // (through the route), so the pair is tried again, a few times at most.
      for (let attempt = 0; attempt < 5; attempt += 1) {
        list.mockClear();
        const routed = await caller(t, root).get(path).expect(200);
        expect(list).toHaveBeenCalledTimes(1);
        const fast = await caller(t, root).get(path).expect(200);
        if (fast.body.meta.cache !== 'hit') continue;
        expect(list).toHaveBeenCalledTimes(1);
        const normalised = (response: typeof fast) => {
          const { body, ...rest } = seen(response);
          return { ...rest, body: { ...body, meta: { ...body.meta, cache: 'x' } } };
        };
        expect(normalised(fast)).toEqual(normalised(routed));
        expect(fast.headers.etag).toBeUndefined();
        return;
      }
      throw new Error(`no hit of ${path} in five tries`);
    },
  );

  it('a page whose rows are filtered for the actor, a bad query and a write all go through the route', async () => {
    const operator = await actor('operator');
    await createDevice({ ownerId: operator.user.id });
    const list = jest.spyOn(t.app.get(DevicesService), 'list');
    await caller(t, operator).get('/v1/admin/devices').expect(200);
    await caller(t, operator).get('/v1/admin/devices').expect(200);
    expect(list).toHaveBeenCalledTimes(2);
    const bad = await caller(t, root).get('/v1/admin/devices?page_size=0').expect(400);
    expect(bad.body.error.code).toBe('VALIDATION_FAILED');
    const tag = `sp-${Date.now()}`;
    const path = `/v1/admin/users?q=${tag}`;
    await caller(t, root).get(path).expect(200);
    expect((await caller(t, root).get(path).expect(200)).body.data).toEqual([]);
    const created = await caller(t, root)
      .post('/v1/admin/users', { email: `${tag}@example.com`, display_name: 'New', role_id: 4 })
      .expect(201);
    const after = await caller(t, root).get(path).expect(200);
    expect(after.body.data.map((user: { id: number }) => user.id)).toEqual([created.body.data.id]);
    expect(after.body.meta.cache).toBe('miss');
  });
});
