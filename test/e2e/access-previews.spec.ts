import { DeviceAuthoritiesService } from '../../src/access-model/device-authorities.service.js';
import { randomUUID } from 'node:crypto';
import { AccessExpiryAnnouncer } from '../../src/access/access-expiry-announcer.js';
import { AuthorityPermissionsService } from '../../src/grants/authority-permissions.service.js';
import { CacheEntries } from '../../src/platform/cache/cache-entries.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { accessWorld, askFor } from '../support/access-requests.js';
import { actor, createUser, permissionId, tokenFor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { testCachePrefix } from '../support/test-env.js';

interface Change {
  user_id: number;
  device_id: number | null;
  permission_code: string;
  decided_by: string;
  change: 'gained' | 'lost';
}

type Method = 'post' | 'patch' | 'delete';

/** The rows a preview must leave alone: the trail, the feed and the access history of its users and devices. */
async function footprint(users: readonly number[], devices: readonly number[]): Promise<Record<string, string>> {
  const [row] = await sql<Record<string, string>>(
    `SELECT (SELECT count(*) FROM audit_events WHERE resource_id = ANY($3::text[]) OR actor_id = ANY($1::bigint[]))::text AS audit,
            (SELECT count(*) FROM events WHERE resource_id = ANY($3::text[]) OR actor_id = ANY($1::bigint[]))::text AS events,
            (SELECT count(*) FROM authority_right_history WHERE user_id = ANY($1::bigint[]))::text AS rights,
            (SELECT count(*) FROM user_access_history WHERE user_id = ANY($1::bigint[]))::text AS users,
            (SELECT string_agg(concat_ws(':', id, version, is_active, revoked_at, is_deleted, owner), ',' ORDER BY id)
               FROM authorities WHERE device_id = ANY($2::bigint[]) OR user_id = ANY($1::bigint[])) AS authorities,
            (SELECT string_agg(concat_ws(':', id, revoked_at), ',' ORDER BY id) FROM permission_grants WHERE user_id = ANY($1::bigint[])) AS grants,
            (SELECT string_agg(concat_ws(':', id, version, status_id, role_id, is_deleted), ',' ORDER BY id) FROM users WHERE id = ANY($1::bigint[])) AS user_rows`,
    [users, devices, [...users, ...devices].map(String)],
  );
  return row ?? {};
}

/** The access events a request committed, as the feed shows them, and the id of its own first event. */
async function accessEventsOf(requestId: string): Promise<{ changes: Change[]; causes: string[]; first: string }> {
  const rows = await sql<{ id: string; type: string; data: Change & { cause: string } }>(
    `SELECT lpad(seq::text, 20, '0') || '-' || lpad(id::text, 20, '0') AS id, type, data
     FROM events WHERE request_id = $1 ORDER BY seq, id`,
    [requestId],
  );
  const access = rows.filter((row) => row.type.startsWith('access.'));
  const first = rows.find((row) => !row.type.startsWith('access.'));
  return {
    changes: access.map(({ type, data }) => ({
      user_id: data.user_id,
      device_id: data.device_id,
      permission_code: data.permission_code,
      decided_by: data.decided_by,
      change: type === 'access.gained' ? 'gained' : 'lost',
    })),
    causes: [...new Set(access.map((row) => row.data.cause))],
    first: first?.id ?? '',
  };
}

const order = (changes: readonly Change[]): Change[] =>
  [...changes].sort((x, y) =>
    `${x.user_id}/${x.device_id}/${x.permission_code}/${x.change}`.localeCompare(
      `${y.user_id}/${y.device_id}/${y.permission_code}/${y.change}`,
    ),
  );

/**
 * Previews (`?dry_run=true`) and access-change events (part 6.17): a preview answers what the write
 * would answer and the access it would give or take, writing nothing; the write itself then
 * announces exactly those changes on the feed, caused by its own event.
 */
describe('previews and access-change events', () => {
  let t: TestApp;
  let root: Caller;

  beforeAll(async () => {
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('access-previews') });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const send = (method: Method, path: string, body: object | undefined, requestId: string) => {
    const request = t.http()[method](path).set('Authorization', root.auth).set('X-Request-Id', requestId);
    return body === undefined ? request : request.send(body);
  };

  /** Previews the write, checks it wrote nothing, then makes it and checks the feed says the same. */
  async function previewThenWrite(
    method: Method,
    path: string,
    body: object | undefined,
    scope: { users: number[]; devices: number[] },
  ): Promise<{ preview: { outcome: unknown; access_changes: Change[] }; written: unknown }> {
    const before = await footprint(scope.users, scope.devices);
    const previewId = `preview-${randomUUID()}`;
    const previewed = await send(
      method,
      `${path}${path.includes('?') ? '&' : '?'}dry_run=true`,
      body,
      previewId,
    ).expect(200);
    expect(previewed.body.data.dry_run).toBe(true);
    expect(previewed.headers.etag).toBeUndefined();
    expect(await footprint(scope.users, scope.devices)).toEqual(before);
    expect(await sql('SELECT 1 FROM events WHERE request_id = $1', [previewId])).toEqual([]);

    const writeId = `write-${randomUUID()}`;
    const written = await send(method, path, body, writeId);
    expect(written.status).toBeLessThan(300);
    // The outcome is the data the write answered, but for the stamps taken as it ran and the id
    // of a row it creates (the preview's rolled-back transaction drew one from the sequence).
    const stamps =
      /^(updated_at|revoked_at|deleted_at|decided_at|access_expires_at|granted_at|version|authority_permission_id)$/;
    const strip = (value: unknown): unknown =>
      JSON.parse(JSON.stringify(value ?? null, (key, item: unknown) => (stamps.test(key) ? undefined : item)));
    expect(strip(previewed.body.data.outcome)).toEqual(strip(written.body.data));
    const announced = await accessEventsOf(writeId);
    expect(order(announced.changes)).toEqual(order(previewed.body.data.access_changes));
    if (announced.changes.length > 0) expect(announced.causes).toEqual([announced.first]);
    return { preview: previewed.body.data, written: written.body.data };
  }

  it('revoking a delegate: the preview names every right it loses on the device; the revoke announces them', async () => {
    const world = await accessWorld(['authorities.read', 'devices.read']);
    const { preview } = await previewThenWrite(
      'post',
      `/v1/admin/authorities/${world.authority}/revoke`,
      { reason: 'left the team' },
      { users: [world.operator.user.id], devices: [world.device] },
    );
    expect(order(preview.access_changes)).toEqual(
      order(
        ['authorities.read', 'devices.read'].map((code) => ({
          user_id: world.operator.user.id,
          device_id: world.device,
          permission_code: code,
          decided_by: 'authority_permission',
          change: 'lost' as const,
        })),
      ),
    );
  });

  it('transferring a device: the old owner loses and the new one gains every device-scoped right there', async () => {
    const world = await accessWorld();
    const { preview } = await previewThenWrite(
      'post',
      `/v1/admin/devices/${world.device}/transfer-owner`,
      { new_owner_user_id: world.operator.user.id, reason: 'handover' },
      { users: [world.owner.user.id, world.operator.user.id], devices: [world.device] },
    );
    const lost = preview.access_changes.filter((c) => c.change === 'lost');
    const gained = preview.access_changes.filter((c) => c.change === 'gained');
    expect(lost.length).toBeGreaterThan(10);
    expect(new Set(lost.map((c) => `${c.user_id}/${c.decided_by}`))).toEqual(
      new Set([`${world.owner.user.id}/device_owner`]),
    );
    expect(gained.map((c) => c.permission_code).sort()).toEqual(lost.map((c) => c.permission_code).sort());
    expect(new Set(gained.map((c) => c.user_id))).toEqual(new Set([world.operator.user.id]));
  });

  it('deactivating and deleting an authority, revoking an authority permission', async () => {
    const world = await accessWorld(['authorities.read', 'authority_permissions.read']);
    const users = [world.operator.user.id];
    const devices = [world.device];
    const [held] = await sql<{ id: string }>(
      'SELECT id FROM authority_permissions WHERE authority_id = $1 AND permission_id = $2',
      [world.authority, permissionId('authority_permissions.read')],
    );
    const single = await previewThenWrite('delete', `/v1/admin/authority-permissions/${held?.id}`, undefined, {
      users,
      devices,
    });
    expect(single.preview.access_changes.map((c) => `${c.permission_code} ${c.change}`)).toEqual([
      'authority_permissions.read lost',
    ]);
    const deactivated = await previewThenWrite(
      'post',
      `/v1/admin/authorities/${world.authority}/deactivate`,
      {},
      {
        users,
        devices,
      },
    );
    expect(deactivated.preview.access_changes.map((c) => c.permission_code)).toEqual(['authorities.read']);
    // Inactive: deleting it takes nothing more.
    const deleted = await previewThenWrite('delete', `/v1/admin/authorities/${world.authority}`, undefined, {
      users,
      devices,
    });
    expect(deleted.preview.access_changes).toEqual([]);
  });

  it('a role change, a suspension and a deletion of a user; a grant revoked', async () => {
    const viewer = await createUser({ role: 'viewer' });
    const device = (await createDevice({ ownerId: viewer.id })).id;
    const scope = { users: [viewer.id], devices: [device] };
    await t
      .http()
      .post('/v1/admin/permission-grants/grant')
      .set('Authorization', root.auth)
      .send({ user_id: viewer.id, permission_id: permissionId('audit.read') })
      .expect(201);
    const revoked = await previewThenWrite(
      'post',
      '/v1/admin/permission-grants/revoke',
      { user_id: viewer.id, permission_id: permissionId('audit.read') },
      scope,
    );
    expect(revoked.preview.access_changes).toEqual([
      {
        user_id: viewer.id,
        device_id: null,
        permission_code: 'audit.read',
        decided_by: 'permission_grant',
        change: 'lost',
      },
    ]);
    const promoted = await previewThenWrite('patch', `/v1/admin/users/${viewer.id}`, { role_id: 3 }, scope);
    const codes = (change: string): string[] =>
      promoted.preview.access_changes.filter((c) => c.change === change).map((c) => c.permission_code);
    expect(codes('gained')).toContain('access_requests.create');
    expect(codes('lost')).toContain('access.read');
    expect(promoted.preview.access_changes.every((c) => c.device_id === null && c.decided_by === 'role')).toBe(true);

    const suspended = await previewThenWrite(
      'post',
      `/v1/admin/users/${viewer.id}/suspend`,
      { reason: 'audit' },
      scope,
    );
    // Everything it had: its role's permissions everywhere and its device's rights as owner.
    const lostOnDevice = suspended.preview.access_changes.filter((c) => c.device_id === device);
    expect(lostOnDevice.length).toBeGreaterThan(10);
    expect(suspended.preview.access_changes.every((c) => c.change === 'lost')).toBe(true);
    // Suspended, it has nothing left to lose by its deletion.
    const deleted = await previewThenWrite('delete', `/v1/admin/users/${viewer.id}`, undefined, scope);
    expect(deleted.preview.access_changes).toEqual([]);
  });

  it('approving an access request: the requester gains exactly the permission on the device', async () => {
    const world = await accessWorld();
    const asked = await t
      .http()
      .post('/v1/admin/access-requests')
      .set('Authorization', world.operator.auth)
      .send(askFor(world, 'authorities.revoke'))
      .expect(201);
    const { preview } = await previewThenWrite(
      'post',
      `/v1/admin/access-requests/${asked.body.data.id}/approve`,
      { reason: 'ok' },
      { users: [world.operator.user.id], devices: [world.device] },
    );
    expect(preview.access_changes).toEqual([
      {
        user_id: world.operator.user.id,
        device_id: world.device,
        permission_code: 'authorities.revoke',
        decided_by: 'authority_permission',
        change: 'gained',
      },
    ]);
    expect(preview.outcome).toMatchObject({ id: asked.body.data.id, state: 'approved' });
  });

  it('a preview of a write that would fail answers its error exactly, and writes nothing', async () => {
    const world = await accessWorld();
    const before = await footprint([world.owner.user.id], [world.device]);
    for (const dryRun of ['?dry_run=true', '']) {
      const refused = await t
        .http()
        .post(`/v1/admin/authorities/${world.ownerAuthority}/revoke${dryRun}`)
        .set('Authorization', root.auth)
        .send({})
        .expect(422);
      expect(refused.body.error.code).toBe('OWNER_AUTHORITY_PROTECTED');
    }
    const self = await t
      .http()
      .post(`/v1/admin/users/${root.user.id}/suspend?dry_run=true`)
      .set('Authorization', root.auth)
      .send({})
      .expect(422);
    expect(self.body.error.code).toBe('SELF_ACTION_FORBIDDEN');
    await t.http().delete('/v1/admin/authorities/999999999?dry_run=true').set('Authorization', root.auth).expect(404);
    const bad = await t
      .http()
      .post(`/v1/admin/authorities/${world.authority}/revoke?dry_run=yes`)
      .set('Authorization', root.auth)
      .send({})
      .expect(400);
    expect(bad.body.error.details).toEqual({
      fields: [{ field: 'dry_run', rule: 'in', message: 'dry_run must be true or false' }],
    });
    expect(await footprint([world.owner.user.id], [world.device])).toEqual(before);
    // A preview checks permissions as the write does: a viewer cannot preview a revoke.
    const viewer = await actor('viewer');
    await t
      .http()
      .post(`/v1/admin/authorities/${world.authority}/revoke?dry_run=true`)
      .set('Authorization', viewer.auth)
      .send({})
      .expect(403);
  });

  it('a preview leaves the cache alone and is not kept for its Idempotency-Key', async () => {
    const world = await accessWorld(['authorities.read']);
    const entries = t.app.get(CacheEntries);
    await t
      .http()
      .get(`/v1/admin/authorities/${world.authority}`)
      .set('Authorization', world.operator.auth)
      .expect(200);
    // The operator's read is decided from its auth context; the device's set is cached on its first use.
    await t.app.get(DeviceAuthoritiesService).forDevice(world.device);
    const deviceSet = (await entries.get(`authz:device:${world.device}`)).entry;
    expect(deviceSet).toBeDefined();
    const context = (await entries.get(`auth:user:${world.operator.user.id}`)).entry;
    expect(context).toBeDefined();
    const key = `k-${randomUUID()}`;
    const previewed = await t
      .http()
      .post(`/v1/admin/authorities/${world.authority}/revoke?dry_run=true`)
      .set('Authorization', root.auth)
      .set('Idempotency-Key', key)
      .send({})
      .expect(200);
    expect(previewed.headers['idempotent-replayed']).toBeUndefined();
    expect((await entries.get(`authz:device:${world.device}`)).entry).toEqual(deviceSet);
    expect((await entries.get(`auth:user:${world.operator.user.id}`)).entry).toEqual(context);
    await t
      .http()
      .get(`/v1/admin/authorities/${world.authority}`)
      .set('Authorization', world.operator.auth)
      .expect(200);
    // The same key then makes the write: the preview was not its first answer.
    const written = await t
      .http()
      .post(`/v1/admin/authorities/${world.authority}/revoke`)
      .set('Authorization', root.auth)
      .set('Idempotency-Key', key)
      .send({})
      .expect(200);
    expect(written.headers['idempotent-replayed']).toBeUndefined();
    expect(written.body.data.revoked_at).not.toBeNull();
    await t
      .http()
      .get(`/v1/admin/authorities/${world.authority}`)
      .set('Authorization', world.operator.auth)
      .expect(403);
  });

  it('writes outside the preview list announce their access changes too: a grant, a bulk grant, an activation', async () => {
    const world = await accessWorld();
    const requestId = `grant-${randomUUID()}`;
    await t
      .http()
      .post('/v1/admin/authority-permissions/bulk-grant')
      .set('Authorization', world.owner.auth)
      .set('X-Request-Id', requestId)
      .send({
        items: [
          { authority_id: world.authority, permission_id: permissionId('devices.read') },
          { authority_id: world.authority, permission_id: permissionId('authorities.read') },
        ],
      })
      .expect(200);
    const announced = await accessEventsOf(requestId);
    expect(order(announced.changes).map((c) => `${c.permission_code} ${c.change} ${c.decided_by}`)).toEqual([
      'authorities.read gained authority_permission',
      'devices.read gained authority_permission',
    ]);
    expect(announced.causes).toEqual([announced.first]);
    // Through the feed as an integration reads it.
    const feed = await t
      .http()
      .get(`/v1/admin/events?types=access.gained&after=${announced.first}`)
      .set('Authorization', root.auth)
      .expect(200);
    const mine = (feed.body.data as { type: string; data: Change & { cause: string } }[]).filter(
      (event) => event.data.user_id === world.operator.user.id,
    );
    expect(mine.map((event) => event.data.permission_code).sort()).toEqual(['authorities.read', 'devices.read']);
    expect(mine[0]?.data.cause).toBe(announced.first);
  });

  it('an expiry is announced as access.lost at its instant, cause "expired", once', async () => {
    const holder = await createUser({ role: 'operator' });
    const owner = await createUser({ role: 'operator' });
    const device = (await createDevice({ ownerId: owner.id })).id;
    const authority = await createAuthority(device, holder.id);
    const [clock] = await sql<{ now: Date }>('SELECT clock_timestamp() AS now');
    const instant = new Date((clock?.now ?? new Date()).getTime() + 1500);
    await t.app.get(UnitOfWork).run((tx) =>
      t.app.get(AuthorityPermissionsService).grantExpiring(tx, {
        authorityId: authority,
        permissionId: permissionId('authorities.read'),
        expiresAt: instant,
        actorId: owner.id,
        reason: 'test',
      }),
    );
    // The announcer stays a second behind the clock (a history version becomes visible just after
    // its stamp): wait on the database's clock until the instant is that far behind.
    await sql('SELECT pg_sleep(greatest(0, extract(epoch FROM ($1::timestamptz - clock_timestamp()))) + 1.05)', [
      instant,
    ]);
    const announcer = t.app.get(AccessExpiryAnnouncer);
    await announcer.run();
    await announcer.run();
    const events = await sql<{ type: string; occurred_at: Date; data: Change & { cause: string } }>(
      "SELECT type, occurred_at, data FROM events WHERE type LIKE 'access.%' AND resource_id = $1 ORDER BY seq, id",
      [String(holder.id)],
    );
    expect(events.map((event) => [event.type, event.data.permission_code, event.data.cause])).toEqual([
      ['access.gained', 'authorities.read', expect.stringMatching(/^\d{20}-\d{20}$/)],
      ['access.lost', 'authorities.read', 'expired'],
    ]);
    expect(events[1]?.occurred_at.toISOString()).toBe(instant.toISOString());
    expect(events[1]?.data).toMatchObject({ device_id: device, decided_by: 'authority_permission' });
    // Not a session of the holder's: its token is refused past the instant already (no job needed).
    const token = await tokenFor(holder);
    await t.http().get(`/v1/admin/authorities/${authority}`).set('Authorization', `Bearer ${token}`).expect(403);
  });
});
