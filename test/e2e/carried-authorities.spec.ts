import { jest } from '@jest/globals';
import { DeviceAuthoritiesService } from '../../src/access-model/device-authorities.service.js';
import { AuthoritiesService } from '../../src/authorities/authorities.service.js';
import { DEFAULT_AUTH_CONTEXT_AUTHORITIES as CARRIED_AUTHORITIES } from '../../src/platform/config/settings.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { actor, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { carriedAuthorities, deviceWithAuthorities, moreAuthorities } from '../support/devices.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

/*
 * An operator's device check from the authorities its auth context carries (issue 39): the
 * context read with the session in the same round trip holds the operator's live authorities and
 * their permissions (up to CARRIED_AUTHORITIES), so a read it is allowed through an authority
 * permission needs no lookup of the device's authority set. Every write that changes them rebuilds
 * the context before it answers; a refusal is asked again of the device's set, so a context built
 * before an authority existed never answers a wrong 403.
 */
describe("an operator's device rights travel with its auth context", () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('carried-authorities') });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  const deviceWith = (operator: Caller, permissions: string[]) => deviceWithAuthorities(operator.user.id, permissions);

  const deviceSetReads = () => jest.spyOn(t.app.get(DeviceAuthoritiesService), 'forDevice');

  const carried = (userId: number) => carriedAuthorities(t.app.get(CacheEntries), userId);

  it('an allowed read is decided from the context: the device set is not read, and the context holds the permission', async () => {
    const operator = await actor('operator');
    const { device, target, own } = await deviceWith(operator, ['authorities.read']);
    await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
    const reads = deviceSetReads();
    const again = await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
    expect(again.body.data.id).toBe(target);
    expect(reads).not.toHaveBeenCalled();
    expect(await carried(operator.user.id)).toEqual([
      expect.objectContaining({
        id: own,
        device_id: device,
        user_id: operator.user.id,
        authority_permissions: [{ code: 'authorities.read', expires_at: null }],
      }),
    ]);
  });

  it('an allowed cached read is answered as stored, before the handler, with the bytes the route sends; a refused one still gets its 403', async () => {
    const operator = await actor('operator');
    const { target } = await deviceWith(operator, ['authorities.read']);
    const first = await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
    const handler = jest.spyOn(t.app.get(AuthoritiesService), 'get');
    const stored = await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
    expect(handler).not.toHaveBeenCalled();
    expect(stored.body.meta.cache).toBe('hit');
    expect(stored.headers.etag).toBe(first.headers.etag);
    expect(stored.body.data).toEqual(first.body.data);
    const stranger = await actor('operator');
    await deviceWith(stranger, ['authorities.read']); // rights on another device only
    const refused = await caller(t, stranger).get(`/v1/admin/authorities/${target}`).expect(403);
    expect(refused.body.error).toMatchObject({
      code: 'PERMISSION_DENIED',
      details: { permission: 'authorities.read' },
    });
    const elsewhere = await caller(t, operator)
      .get(`/v1/admin/authorities/${target}?include_deleted=false`)
      .expect(200);
    expect(elsewhere.body.data).toEqual(first.body.data);
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('a grant through the API is carried before it answers; its revoke refuses the very next read', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, []);
    await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(403);
    const granted = await caller(t, root)
      .post('/v1/admin/authority-permissions', { authority_id: own, permission_id: permissionId('authorities.read') })
      .expect(201);
    const reads = deviceSetReads();
    await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
    expect(reads).not.toHaveBeenCalled();
    await caller(t, root).delete(`/v1/admin/authority-permissions/${granted.body.data.id}`).expect(200);
    const refused = await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(403);
    expect(refused.body.error.code).toBe('PERMISSION_DENIED');
    expect(await carried(operator.user.id)).toEqual([expect.objectContaining({ id: own, authority_permissions: [] })]);
  });

  it('deactivating the operator’s authority through the API refuses the next read', async () => {
    const operator = await actor('operator');
    const { target, own } = await deviceWith(operator, ['authorities.read']);
    await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
    await caller(t, root).post(`/v1/admin/authorities/${own}/deactivate`, {}).expect(200);
    await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(403);
    expect(await carried(operator.user.id)).toEqual([]);
  });

  it('an authority the context does not carry yet (written behind its back) is found in the device set: no wrong 403', async () => {
    const operator = await actor('operator');
    await caller(t, operator).get('/v1/admin/users?page_size=1').expect(200);
    expect(await carried(operator.user.id)).toEqual([]);
    const { target } = await deviceWith(operator, ['authorities.read']);
    const reads = deviceSetReads();
    await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
    expect(reads).toHaveBeenCalledTimes(1);
  });

  it(`a holder of more than ${CARRIED_AUTHORITIES} authorities carries none and is decided from each device's set`, async () => {
    const operator = await actor('operator');
    const { target } = await deviceWith(operator, ['authorities.read']);
    await moreAuthorities(operator.user.id, CARRIED_AUTHORITIES);
    const reads = deviceSetReads();
    await caller(t, operator).get(`/v1/admin/authorities/${target}`).expect(200);
    expect(reads).toHaveBeenCalledTimes(1);
    expect(await carried(operator.user.id)).toBeNull();
  });
});
