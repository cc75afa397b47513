import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { isDeviceScoped, PERMISSIONS } from '../../src/platform/auth/permissions.js';
import { actor, createUser, permissionId, tokenFor, type Caller, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { createOwnDatabase } from '../support/own-database.js';
import { testCachePrefix } from '../support/test-env.js';

/*
 * Part 6.17 as a property: in a small random world (with nested groups holding roles, grants and
 * authorities), for random writes among the sixteen previewable routes, the preview's `access_changes` equal the difference between the access questions of
 * part 6.13 asked before and after the real write, and the real write's `access.gained` /
 * `access.lost` events equal them too. A preview that answers an error is answered the same by the
 * write, which then changes nobody's access.
 *
 * Random by default; a failure names its seed: `PROPERTY_SEED=<seed>` replays it (same worlds and
 * writes, in order). `PROPERTY_RUNS` (worlds, default 3) and `PROPERTY_WRITES` (per world, default
 * 8) size the run.
 */

const SEED = Number(process.env.PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.PROPERTY_RUNS ?? 3);
const WRITES = Number(process.env.PROPERTY_WRITES ?? 8);
/** `PROPERTY_TRACE=1` prints every write made, with its answers. */
const TRACE = process.env.PROPERTY_TRACE === '1';

interface Entry {
  user_id: number;
  device_id: number | null;
  permission_code: string;
  decided_by: string;
  /** The group the way comes through (null: the user's own). */
  group_id: number | null;
}

interface Change extends Entry {
  change: 'gained' | 'lost';
}

/** Who may do what, keyed by user, device (`*`: everywhere) and permission. */
type Answer = Map<string, Entry>;

const keyOf = (entry: Entry): string => `${entry.user_id}/${entry.device_id ?? '*'}/${entry.permission_code}`;

/** gained = after − before (decided by its way now), lost = before − after (by its way then). */
function difference(before: Answer, after: Answer): Change[] {
  const changes: Change[] = [];
  for (const [key, entry] of after) if (!before.has(key)) changes.push({ ...entry, change: 'gained' });
  for (const [key, entry] of before) if (!after.has(key)) changes.push({ ...entry, change: 'lost' });
  return changes;
}

/** Exactly the six fields of a change, in one order (the comparisons are order-insensitive). */
const normal = (changes: readonly Change[]): Change[] =>
  changes
    .map(({ user_id, device_id, permission_code, decided_by, group_id, change }) => ({
      user_id,
      device_id,
      permission_code,
      decided_by,
      group_id: group_id ?? null,
      change,
    }))
    .sort((x, y) => `${keyOf(x)}/${x.change}`.localeCompare(`${keyOf(y)}/${y.change}`));

/** The access events a request committed, and the id of its own first (non-access) event. */
async function accessEventsOf(requestId: string): Promise<{ changes: Change[]; causes: string[]; first: string }> {
  const rows = await sql<{ id: string; type: string; data: Entry & { cause: string } }>(
    `SELECT lpad(seq::text, 20, '0') || '-' || lpad(id::text, 20, '0') AS id, type, data
     FROM events WHERE request_id = $1 ORDER BY seq, id`,
    [requestId],
  );
  const access = rows.filter((row) => row.type === 'access.gained' || row.type === 'access.lost');
  return {
    changes: access.map(({ type, data }) => ({ ...data, change: type === 'access.gained' ? 'gained' : 'lost' })),
    causes: [...new Set(access.map((row) => row.data.cause))],
    first: rows.find((row) => !row.type.startsWith('access.'))?.id ?? '',
  };
}

/** Runs the tasks at most `width` at a time, answering their results in order. */
async function inParallel<T>(tasks: readonly (() => Promise<T>)[], width = 8): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < tasks.length) {
      const index = next++;
      const task = tasks[index];
      if (task !== undefined) results[index] = await task();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, tasks.length) }, lane));
  return results;
}

const DEVICE_SCOPED = PERMISSIONS.map((permission) => permission.code).filter(isDeviceScoped);
/** The device layer's ways, in the order the rules decide by. */
const DEVICE_WAYS = ['device_owner', 'authority_permission', 'group_authority_permission'];
/** Held through a grant: some device-scoped (everywhere then), some not. */
const GRANT_CODES = [
  'audit.read',
  'events.read',
  'access.read',
  'webhooks.manage',
  'permission_grants.grant',
  'devices.read',
  'authorities.revoke',
  'access_requests.approve',
];
/** Held through an authority, or asked for in an access request. */
const AUTHORITY_CODES = [
  'devices.read',
  'devices.update',
  'devices.transfer_owner',
  'authorities.read',
  'authorities.revoke',
  'authority_permissions.read',
  'access_requests.approve',
  'access_reviews.decide',
];

const KINDS = [
  'transfer',
  'revoke',
  'deactivate',
  'delete-authority',
  'role',
  'suspend',
  'delete-user',
  'revoke-grant',
  'revoke-authority-permission',
  'approve',
  'add-member',
  'nest-group',
  'remove-member',
  'group-role',
  'delete-group',
  'grant-to-group',
  'group-authority-permission',
] as const;
type Kind = (typeof KINDS)[number];

const worldArbitrary = fc.record({
  users: fc.array(
    fc.record({
      role: fc.constantFrom('admin' as const, 'operator' as const, 'operator' as const, 'viewer' as const),
      status: fc.constantFrom(
        ...(['active', 'active', 'active', 'active', 'active', 'active', 'pending', 'suspended'] as const),
      ),
      grants: fc.subarray(GRANT_CODES, { maxLength: 2 }),
    }),
    { minLength: 4, maxLength: 4 },
  ),
  devices: fc.array(
    fc.record({
      owner: fc.option(fc.nat(3), { freq: 5 }),
      // Kept by the owner's authority when it is demoted by a transfer.
      permissions: fc.subarray(AUTHORITY_CODES, { maxLength: 2 }),
    }),
    { minLength: 3, maxLength: 3 },
  ),
  authorities: fc.array(
    fc.record({
      device: fc.nat(2),
      user: fc.nat(3),
      active: fc.constantFrom(true, true, true, false),
      expiry: fc.constantFrom(...([null, null, null, null, 'past', 'future'] as const)),
      permissions: fc.subarray(AUTHORITY_CODES, { maxLength: 3 }),
      // Authority permissions that end by themselves (as approvals make them): ended, or not yet.
      timed: fc.array(fc.record({ code: fc.constantFrom(...AUTHORITY_CODES), past: fc.boolean() }), {
        maxLength: 1,
      }),
    }),
    { minLength: 2, maxLength: 6 },
  ),
  requests: fc.array(fc.record({ pick: fc.nat(), code: fc.constantFrom(...AUTHORITY_CODES) }), {
    minLength: 1,
    maxLength: 2,
  }),
  // Three groups: group i may sit in group i - 1 (a chain up to three deep); each may carry a
  // role, grants, an authority on a device, and users (some memberships ending by themselves).
  groups: fc.array(
    fc.record({
      role: fc.constantFrom(...([null, null, 4, 3, 2] as const)),
      nested: fc.boolean(),
      grants: fc.subarray(GRANT_CODES, { maxLength: 1 }),
      authority: fc.option(
        fc.record({ device: fc.nat(2), permissions: fc.subarray(AUTHORITY_CODES, { minLength: 1, maxLength: 2 }) }),
        { freq: 2 },
      ),
      members: fc.array(fc.record({ user: fc.nat(3), expiring: fc.boolean() }), { maxLength: 2 }),
    }),
    { minLength: 3, maxLength: 3 },
  ),
});
type WorldSpec = typeof worldArbitrary extends fc.Arbitrary<infer T> ? T : never;

const writeArbitrary = fc.record({
  kind: fc.constantFrom(...KINDS),
  a: fc.nat(),
  b: fc.nat(),
  flag: fc.boolean(),
});
type WriteSpec = typeof writeArbitrary extends fc.Arbitrary<infer T> ? T : never;

interface World {
  readonly users: TestUser[];
  readonly devices: number[];
  readonly groups: number[];
  readonly requests: number[];
  /** What became of each access request asked for (for the trace). */
  readonly asked: string[];
}

interface Write {
  readonly method: 'post' | 'patch' | 'delete';
  readonly path: string;
  readonly body?: object;
}

const pick = <T>(items: readonly T[], index: number): T | undefined => items[index % Math.max(items.length, 1)];

describe('previews and access-change events, as a property (part 6.17)', () => {
  let t: TestApp;
  let root: Caller;
  let database: Awaited<ReturnType<typeof createOwnDatabase>>;

  beforeAll(async () => {
    // Its own database: its random worlds grant rights everywhere (access_requests.approve among
    // them), which would make their users approvers of other specs' requests. Every helper
    // (actor, sql, startApp) reads the database from this file's environment.
    database = await createOwnDatabase('access_property');
    process.env.ADMIN_API_TEST_DATABASE_URL = database.url;
    // Thousands of access questions a minute from one caller: past the per-actor limit otherwise.
    t = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('access-preview-property'),
      env: { RATE_LIMIT_PER_MINUTE: '1000000' },
    });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  const get = (path: string) => t.http().get(path).set('Authorization', root.auth);

  /** One user's access as the access questions answer it (a deleted user: none). */
  async function accessOf(userId: number): Promise<Entry[]> {
    const checks = await inParallel(
      PERMISSIONS.map(
        ({ code }) =>
          () =>
            get(`/v1/admin/authz/check?user_id=${userId}&permission=${code}`),
      ),
    );
    if (checks.some((check) => check.status === 404)) {
      for (const check of checks) expect([check.status, check.body.error?.code]).toEqual([404, 'USER_NOT_FOUND']);
      const listed = await get(`/v1/admin/users/${userId}/access?permission=devices.read`);
      expect([listed.status, listed.body.error?.code]).toEqual([404, 'USER_NOT_FOUND']);
      return [];
    }
    const entries: Entry[] = [];
    const everywhere = new Map<string, boolean>();
    PERMISSIONS.forEach(({ code }, index) => {
      const check = checks[index];
      expect(check?.status).toBe(200);
      everywhere.set(code, check?.body.data.allowed === true);
      if (check?.body.data.allowed === true)
        entries.push({
          user_id: userId,
          device_id: null,
          permission_code: code,
          decided_by: check.body.data.decided_by,
          group_id: check.body.data.group_id ?? null,
        });
    });
    const perDevice = await inParallel(
      DEVICE_SCOPED.map((code) => async () => {
        const found: Entry[] = [];
        for (let page = 1; ; page++) {
          const listed = await get(`/v1/admin/users/${userId}/access?permission=${code}&page=${page}&page_size=100`);
          expect(listed.status).toBe(200);
          // `meta.scope` and `/authz/check` answer the same question: allowed everywhere?
          expect(`${code}: ${listed.body.meta.scope}`).toBe(`${code}: ${everywhere.get(code) ? 'all' : 'devices'}`);
          for (const item of listed.body.data as {
            device_id: number;
            allowed_by: { decided_by: string; group_id: number | null }[];
          }[]) {
            const way = item.allowed_by.find((path) => DEVICE_WAYS.includes(path.decided_by));
            expect(way).toBeDefined();
            found.push({
              user_id: userId,
              device_id: item.device_id,
              permission_code: code,
              decided_by: way?.decided_by ?? '',
              group_id: way?.group_id ?? null,
            });
          }
          if (page * 100 >= Number(listed.body.meta.total)) break;
        }
        return found;
      }),
    );
    return [...entries, ...perDevice.flat()];
  }

  async function answerOf(world: World): Promise<Answer> {
    const answer: Answer = new Map();
    for (const user of world.users) for (const entry of await accessOf(user.id)) answer.set(keyOf(entry), entry);
    return answer;
  }

  async function buildWorld(spec: WorldSpec): Promise<World> {
    const users = await Promise.all(spec.users.map((user) => createUser({ role: user.role, status: user.status })));
    for (const [index, user] of spec.users.entries())
      for (const code of user.grants)
        await t
          .http()
          .post('/v1/admin/permission-grants/grant')
          .set('Authorization', root.auth)
          .send({ user_id: users[index]?.id, permission_id: permissionId(code), reason: 'property world' })
          .expect(201);
    const devices: number[] = [];
    const owners = new Map<number, number>();
    for (const { owner, permissions } of spec.devices) {
      const ownerId = owner === null ? undefined : users[owner]?.id;
      const device = (await createDevice(ownerId === undefined ? {} : { ownerId })).id;
      devices.push(device);
      if (ownerId === undefined) continue;
      owners.set(device, ownerId);
      for (const code of permissions)
        await sql(
          `INSERT INTO authority_permissions (authority_id, permission_id)
           SELECT id, $2 FROM authorities WHERE device_id = $1 AND owner`,
          [device, permissionId(code)],
        );
    }
    const made = new Set<string>();
    const live: { device: number; user: TestUser; permissions: string[] }[] = [];
    for (const authority of spec.authorities) {
      const device = devices[authority.device];
      const user = users[authority.user];
      if (device === undefined || user === undefined || owners.get(device) === user.id) continue;
      if (made.has(`${device}/${user.id}`)) continue;
      made.add(`${device}/${user.id}`);
      const day = 86_400_000;
      const id = await createAuthority(device, user.id, {
        isActive: authority.active,
        ...(authority.expiry === null
          ? {}
          : { expiresAt: new Date(Date.now() + (authority.expiry === 'past' ? -day : day)) }),
      });
      // Authority permissions that end by themselves come from approvals, before any later grant
      // of the same permission: at most one live row per authority and permission (part 6.6), and
      // the newest row of a pair is its right's newest version. So an approval's row that has not
      // ended yet stands only where the permission is not held otherwise; an ended one may.
      for (const { code, past } of authority.timed)
        if (past || !authority.permissions.includes(code))
          await sql(
            `INSERT INTO authority_permissions (authority_id, permission_id, granted_at, expires_at)
             VALUES ($1, $2, now() - interval '2 days', now() + make_interval(days => $3))`,
            [id, permissionId(code), past ? -1 : 1],
          );
      for (const code of authority.permissions)
        await sql('INSERT INTO authority_permissions (authority_id, permission_id) VALUES ($1, $2)', [
          id,
          permissionId(code),
        ]);
      if (authority.active && authority.expiry !== 'past')
        live.push({ device, user, permissions: authority.permissions });
    }
    // Access requests: an active operator asks on a device where it holds a live authority.
    const requests: number[] = [];
    const asked: string[] = [];
    const askers = live.filter(({ user }) => user.role_id === 3 && user.status_id === 2);
    // None: an active operator, if there is one, gets a bare authority to ask from.
    const operator = users.find((user) => user.role_id === 3 && user.status_id === 2);
    const free = devices.find(
      (device) => operator !== undefined && !made.has(`${device}/${operator.id}`) && owners.get(device) !== operator.id,
    );
    if (askers.length === 0 && operator !== undefined && free !== undefined) {
      await createAuthority(free, operator.id);
      askers.push({ device: free, user: operator, permissions: [] });
    }
    for (const request of spec.requests) {
      const asker = pick(askers, request.pick);
      // The drawn permission, or the next one the asker's authority does not hold.
      const start = AUTHORITY_CODES.indexOf(request.code);
      const code = [...AUTHORITY_CODES.slice(start), ...AUTHORITY_CODES.slice(0, start)].find(
        (candidate) => !asker?.permissions.includes(candidate),
      );
      if (asker === undefined || code === undefined) {
        asked.push('no asker');
        continue;
      }
      const answer = await t
        .http()
        .post('/v1/admin/access-requests')
        .set('Authorization', `Bearer ${await tokenFor(asker.user)}`)
        .send({
          device_id: asker.device,
          permission_id: permissionId(code),
          reason: 'property world',
          duration_seconds: 3600,
        });
      // Already allowed (a grant), or already asked: no request, which is fine.
      asked.push(`${answer.status} ${answer.body.error?.details?.reason ?? answer.body.error?.code ?? ''}`);
      if (answer.status === 201) requests.push(Number(answer.body.data.id));
      else expect([409, 422]).toContain(answer.status);
    }
    const groups = await buildGroups(spec, users, devices);
    return { users, devices, groups, requests, asked };
  }

  /** The world's groups, made through the API as a client would (root outranks every user). */
  async function buildGroups(
    spec: WorldSpec,
    users: readonly TestUser[],
    devices: readonly number[],
  ): Promise<number[]> {
    const call = (method: 'post' | 'patch', path: string, body: object) =>
      t.http()[method](path).set('Authorization', root.auth).send(body);
    const groups: number[] = [];
    for (const [index, group] of spec.groups.entries()) {
      const made = await call('post', '/v1/admin/groups', {
        name: `property ${randomUUID().slice(0, 8)}`,
        ...(group.role === null ? {} : { role_id: group.role }),
      }).expect(201);
      const id = Number(made.body.data.id);
      groups.push(id);
      const parent = groups[index - 1];
      if (group.nested && parent !== undefined)
        await call('post', `/v1/admin/groups/${parent}/members`, { members: [{ group_id: id }] }).expect(200);
      for (const code of group.grants)
        await call('post', '/v1/admin/permission-grants/grant', {
          group_id: id,
          permission_id: permissionId(code),
        }).expect(201);
      const device = group.authority === null ? undefined : devices[group.authority.device];
      if (group.authority !== null && device !== undefined) {
        const authority = await call('post', '/v1/admin/authorities', { device_id: device, group_id: id }).expect(201);
        for (const code of group.authority.permissions)
          await call('post', '/v1/admin/authority-permissions', {
            authority_id: authority.body.data.id,
            permission_id: permissionId(code),
          }).expect(201);
      }
      for (const [position, member] of group.members.entries()) {
        const user = users[member.user];
        if (user === undefined || group.members.findIndex((other) => other.user === member.user) !== position) continue;
        const expiry = member.expiring ? { expires_at: new Date(Date.now() + 86_400_000).toISOString() } : {};
        await call('post', `/v1/admin/groups/${id}/members`, { members: [{ user_id: user.id }], ...expiry }).expect(
          200,
        );
      }
    }
    return groups;
  }

  /** The concrete write a random choice stands for, in the world as it is now. */
  async function resolve(spec: WriteSpec, world: World): Promise<Write> {
    const user = pick(world.users, spec.a)?.id ?? 0;
    const authorities = (
      await sql<{ id: string }>('SELECT id FROM authorities WHERE device_id = ANY($1::bigint[]) ORDER BY id', [
        world.devices,
      ])
    ).map((row) => Number(row.id));
    const authority = pick(authorities, spec.a) ?? 999_999_999;
    const group = pick(world.groups, spec.a) ?? 999_999_999;
    const kind: Kind = spec.kind;
    switch (kind) {
      case 'transfer':
        return {
          method: 'post',
          path: `/v1/admin/devices/${pick(world.devices, spec.a)}/transfer-owner`,
          body: {
            new_owner_user_id: pick(world.users, spec.b)?.id,
            reason: 'property',
            keep_previous_owner_access: spec.flag,
          },
        };
      case 'revoke':
        return { method: 'post', path: `/v1/admin/authorities/${authority}/revoke`, body: { reason: 'property' } };
      case 'deactivate':
        return { method: 'post', path: `/v1/admin/authorities/${authority}/deactivate`, body: {} };
      case 'delete-authority':
        return { method: 'delete', path: `/v1/admin/authorities/${authority}` };
      case 'role':
        return { method: 'patch', path: `/v1/admin/users/${user}`, body: { role_id: (spec.b % 5) + 1 } };
      case 'suspend':
        return { method: 'post', path: `/v1/admin/users/${user}/suspend`, body: { reason: 'property' } };
      case 'delete-user':
        return { method: 'delete', path: `/v1/admin/users/${user}` };
      case 'revoke-grant': {
        // Mostly a grant that is live; otherwise any pair (404 when none is).
        const grants = await sql<{ user_id: string; permission_id: number }>(
          `SELECT user_id, permission_id FROM permission_grants
           WHERE user_id = ANY($1::bigint[]) AND revoked_at IS NULL ORDER BY id`,
          [world.users.map((each) => each.id)],
        );
        const live = spec.flag || spec.b % 4 !== 0 ? pick(grants, spec.b) : undefined;
        return {
          method: 'post',
          path: '/v1/admin/permission-grants/revoke',
          body: {
            user_id: live === undefined ? user : Number(live.user_id),
            permission_id: live?.permission_id ?? permissionId(pick(GRANT_CODES, spec.b) ?? 'audit.read'),
            reason: 'property',
          },
        };
      }
      case 'revoke-authority-permission': {
        const held = await sql<{ id: string }>(
          `SELECT ap.id FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id
           WHERE a.device_id = ANY($1::bigint[]) ORDER BY ap.revoked_at IS NULL DESC, ap.id`,
          [world.devices],
        );
        return { method: 'delete', path: `/v1/admin/authority-permissions/${pick(held, spec.b)?.id ?? 999_999_999}` };
      }
      case 'approve':
        return {
          method: 'post',
          path: `/v1/admin/access-requests/${pick(world.requests, spec.a) ?? 999_999_999}/approve`,
          body: { reason: 'property' },
        };
      case 'add-member':
        return {
          method: 'post',
          path: `/v1/admin/groups/${group}/members`,
          body: { members: [{ user_id: pick(world.users, spec.b)?.id }], reason: 'property' },
        };
      case 'nest-group':
        // Any pair: a cycle or a group in itself is refused alike by the preview and the write.
        return {
          method: 'post',
          path: `/v1/admin/groups/${group}/members`,
          body: { members: [{ group_id: pick(world.groups, spec.b) }] },
        };
      case 'remove-member': {
        const members = await sql<{ user_id: string | null; member_group_id: string | null }>(
          `SELECT user_id, member_group_id FROM group_memberships WHERE group_id = $1 AND removed_at IS NULL ORDER BY id`,
          [group],
        );
        const member = pick(members, spec.b);
        return {
          method: 'post',
          path: `/v1/admin/groups/${group}/members/remove`,
          body: {
            members: [
              member?.member_group_id != null
                ? { group_id: Number(member.member_group_id) }
                : { user_id: Number(member?.user_id ?? pick(world.users, spec.b)?.id) },
            ],
          },
        };
      }
      case 'group-role':
        return {
          method: 'patch',
          path: `/v1/admin/groups/${group}`,
          body: { role_id: spec.flag ? null : (spec.b % 4) + 2 },
        };
      case 'delete-group':
        return { method: 'delete', path: `/v1/admin/groups/${group}` };
      case 'grant-to-group':
        return {
          method: 'post',
          path: '/v1/admin/permission-grants/grant',
          body: { group_id: group, permission_id: permissionId(pick(GRANT_CODES, spec.b) ?? 'audit.read') },
        };
      case 'group-authority-permission': {
        const held = await sql<{ id: string }>(
          'SELECT id FROM authorities WHERE group_id = ANY($1::bigint[]) ORDER BY id',
          [world.groups],
        );
        return {
          method: 'post',
          path: '/v1/admin/authority-permissions',
          body: {
            authority_id: Number(pick(held, spec.a)?.id ?? 999_999_999),
            permission_id: permissionId(pick(AUTHORITY_CODES, spec.b) ?? 'devices.read'),
          },
        };
      }
    }
  }

  const send = (write: Write, preview: boolean, requestId: string) => {
    const path = preview ? `${write.path}?dry_run=true` : write.path;
    const request = t.http()[write.method](path).set('Authorization', root.auth).set('X-Request-Id', requestId);
    return write.body === undefined ? request : request.send(write.body);
  };

  /** The entries of the users a mismatch is about, before and after (for the failure report). */
  const around = (answer: Answer, changes: readonly Change[]): string[] => {
    const users = new Set(changes.map((change) => change.user_id));
    return [...answer.values()]
      .filter((entry) => users.has(entry.user_id))
      .map((entry) => `${keyOf(entry)} ${entry.decided_by}`)
      .sort();
  };

  /** What the writes did: refused (an error, previewed alike), changed someone's access, or not. */
  const tally = { refused: 0, changed: 0, unchanged: 0, changes: 0 };

  async function checkWrite(world: World, spec: WriteSpec, before: Answer, trail: string[]): Promise<Answer> {
    const write = await resolve(spec, world);
    const previewId = `prop-preview-${randomUUID()}`;
    const writeId = `prop-write-${randomUUID()}`;
    const previewed = await send(write, true, previewId);
    const written = await send(write, false, writeId);
    const after = await answerOf(world);
    const expected = difference(before, after);
    const announced = await accessEventsOf(writeId);
    const described = `${write.method.toUpperCase()} ${write.path} ${JSON.stringify(write.body ?? null)}`;
    trail.push(
      `${described} → preview ${previewed.status}${previewed.body.error ? ` ${previewed.body.error.code}` : ''}, write ${written.status}, ${expected.length} changes`,
    );
    try {
      // A preview writes nothing: no event under its request id.
      expect(await sql('SELECT 1 FROM events WHERE request_id = $1', [previewId])).toEqual([]);
      if (previewed.status !== 200) {
        // Refused as the write is refused: a client's error, never the service's own.
        expect(previewed.status).toBeLessThan(500);
        expect(previewed.body.error).toBeDefined();
        expect([written.status, written.body.error?.code]).toEqual([previewed.status, previewed.body.error.code]);
        expect(normal(expected)).toEqual([]);
        expect(normal(announced.changes)).toEqual([]);
        tally.refused++;
        return after;
      }
      expect(previewed.body.data.dry_run).toBe(true);
      expect(written.status).toBeLessThan(300);
      const previewedChanges = previewed.body.data.access_changes as Change[];
      expect({ preview_access_changes: normal(previewedChanges) }).toEqual({
        preview_access_changes: normal(expected),
      });
      expect({ committed_access_events: normal(announced.changes) }).toEqual({
        committed_access_events: normal(expected),
      });
      // Every access event is caused by the write's own (first) event.
      if (announced.changes.length > 0) expect(announced.causes).toEqual([announced.first]);
      if (expected.length > 0) tally.changed++;
      else tally.unchanged++;
      tally.changes += expected.length;
      return after;
    } catch (error) {
      const all = [...expected, ...announced.changes, ...((previewed.body.data?.access_changes as Change[]) ?? [])];
      throw new Error(
        [
          `Disagreement at ${described} (seed ${SEED}; replay with PROPERTY_SEED=${SEED})`,
          `writes so far:\n  ${trail.join('\n  ')}`,
          `preview ${previewed.status}: ${JSON.stringify(previewed.body.data?.access_changes ?? previewed.body.error)}`,
          `write ${written.status} (${writeId}) events: ${JSON.stringify(normal(announced.changes))}`,
          `answer difference: ${JSON.stringify(normal(expected))}`,
          `before (users concerned): ${around(before, all).join(', ')}`,
          `after (users concerned): ${around(after, all).join(', ')}`,
          (error as Error).message,
        ].join('\n'),
        { cause: error },
      );
    }
  }

  it('a preview names exactly the access its write changes, and the write announces exactly that', async () => {
    let cases = 0;
    const started = Date.now();
    try {
      await fc.assert(
        fc.asyncProperty(
          worldArbitrary,
          fc.array(writeArbitrary, { minLength: WRITES, maxLength: WRITES }),
          async (spec, writes) => {
            const world = await buildWorld(spec);
            const trail: string[] = [
              `world: users ${world.users.map((user) => `${user.id}(role ${user.role_id}, status ${user.status_id})`).join(' ')}, devices ${world.devices.join(' ')}, groups ${world.groups.join(' ')}, requests ${world.requests.join(' ') || 'none'} (${world.asked.join(', ')})`,
            ];
            let answer = await answerOf(world);
            for (const write of writes) {
              answer = await checkWrite(world, write, answer, trail);
              cases++;
            }
            if (TRACE) process.stdout.write(`${trail.join('\n')}\n`);
          },
        ),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    } catch (error) {
      throw new Error(`Property failed with PROPERTY_SEED=${SEED}: ${(error as Error).message}`, { cause: error });
    }
    process.stdout.write(
      `access-preview property: ${cases} writes in ${RUNS} worlds (${tally.changed} changed access, ${tally.changes} changes; ` +
        `${tally.unchanged} changed none; ${tally.refused} refused), seed ${SEED}, ${Date.now() - started} ms\n`,
    );
  }, 300_000);
});
