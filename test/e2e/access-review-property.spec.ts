import fc from 'fast-check';
import { ROLE } from '../../src/platform/auth/roles.js';
import { outranks } from '../../src/access-model/user-rules.js';
import { isDeviceScoped } from '../../src/platform/auth/permissions.js';
import { actor, createUser, permissionId, tokenFor, type Caller, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { createOwnDatabase } from '../support/own-database.js';
import { testCachePrefix } from '../support/test-env.js';

/*
 * Part 6.16 as a property: in a small random world (users with roles, devices with owners,
 * delegates holding device-scoped authority permissions, permission grants), a campaign with a
 * random scope and default decision is opened; random reviewers in two lanes side by side take
 * random decisions while, concurrently, rights are granted, revoked, and revoked then granted
 * again by hand through the API. Then the campaign closes.
 *
 * - The snapshot holds exactly the world's live paths in scope.
 * - Each decision is answered as the rules say (the reviewer's right, asked of `/authz/check`
 *   beforehand; self; an owner's authority not revocable), and a lane's last decision stands.
 * - The campaign's `counts` before the close are the items' decisions counted.
 * - After the close, `result` counts the items (revoked: revocable items whose decision, or the
 *   default, is revoke; kept: the others; failed: none).
 * - Every such revoked item's row is revoked (by the close, by the closer, with reason
 *   `access review {id}`; or untouched when it was already revoked by hand), and the access
 *   questions no longer show its way (asked before the close too, so a stale cache shows); every
 *   other row (kept items, paths granted after the snapshot, rows out of scope) is exactly as it
 *   was before the close, and every such way that allowed before still allows.
 *
 * Random by default; a failure names its seed: `PROPERTY_SEED=<seed>` replays it (same worlds,
 * scopes and decisions; the interleaving of the concurrent writes may differ). `PROPERTY_RUNS`
 * (campaigns, default 3) sizes the run; `PROPERTY_TRACE=1` prints each campaign's story.
 */

const SEED = Number(process.env.PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.PROPERTY_RUNS ?? 3);
const TRACE = process.env.PROPERTY_TRACE === '1';

const BASE = '/v1/admin/access-reviews';
const DECIDE = 'access_reviews.decide';
const DAY = 86_400_000;

/** Held through an authority permission (all device-scoped). */
const AUTHORITY_CODES = [
  'devices.read',
  'devices.update',
  'authorities.read',
  'authority_permissions.read',
  'access_requests.approve',
  DECIDE,
];
/** Held through a permission grant: some device-scoped (everywhere then), some not. */
const GRANT_CODES = ['audit.read', 'events.read', 'devices.read', 'webhooks.read', DECIDE];
/**
 * What the concurrent writes grant and revoke: not the reviewers' own right, so who may decide
 * what stays as `/authz/check` answered before the decisions.
 */
const WRITTEN_AUTHORITY_CODES = AUTHORITY_CODES.filter((code) => code !== DECIDE);
const WRITTEN_GRANT_CODES = GRANT_CODES.filter((code) => code !== DECIDE);
const SCOPE_CODES = [...new Set([...AUTHORITY_CODES, ...GRANT_CODES])];

interface Item {
  id: number;
  user_id: number;
  device_id: number | null;
  permission_code: string | null;
  decided_by: 'permission_grant' | 'authority_permission' | 'device_owner';
  authority_id: number | null;
  grant_id: number | null;
  authority_permission_id: number | null;
  revocable: boolean;
  decision: 'keep' | 'revoke' | null;
  reviewer_id: number | null;
}

interface Path {
  decided_by: string;
  authority_id: number | null;
  grant_id: number | null;
}

const worldArbitrary = fc.record({
  users: fc.array(
    fc.record({
      role: fc.constantFrom('admin' as const, 'operator' as const, 'operator' as const, 'viewer' as const),
      grants: fc.subarray(GRANT_CODES, { maxLength: 2 }),
    }),
    { minLength: 4, maxLength: 5 },
  ),
  devices: fc.array(fc.option(fc.nat(4), { freq: 4 }), { minLength: 2, maxLength: 3 }),
  delegates: fc.array(
    fc.record({ device: fc.nat(2), user: fc.nat(4), permissions: fc.subarray(AUTHORITY_CODES, { minLength: 1 }) }),
    { minLength: 2, maxLength: 5 },
  ),
});
type WorldSpec = typeof worldArbitrary extends fc.Arbitrary<infer T> ? T : never;

const campaignArbitrary = fc.record({
  // Naming devices leaves the grants out: mostly not.
  devices: fc.oneof(
    { arbitrary: fc.constant(null), weight: 2 },
    { arbitrary: fc.subarray([0, 1, 2], { minLength: 1 }), weight: 1 },
  ),
  codes: fc.option(fc.subarray(SCOPE_CODES, { minLength: 1, maxLength: 4 }), { freq: 2 }),
  users: fc.option(fc.subarray([0, 1, 2, 3, 4], { minLength: 1 }), { freq: 2 }),
  defaultDecision: fc.constantFrom('keep' as const, 'revoke' as const),
  // Reviewer 0 is the root; 1.. the world's users.
  batches: fc.array(
    fc.record({
      reviewer: fc.nat(5),
      // Mostly someone allowed to decide the batch's first item (an owner, an admin, a delegate).
      able: fc.constantFrom(true, true, false),
      picks: fc.array(fc.record({ item: fc.nat(), decision: fc.constantFrom('keep' as const, 'revoke' as const) }), {
        minLength: 1,
        maxLength: 6,
      }),
    }),
    { minLength: 1, maxLength: 6 },
  ),
  writes: fc.array(
    fc.record({
      kind: fc.constantFrom(
        'grant-authority-permission' as const,
        'revoke-authority-permission' as const,
        'regrant-authority-permission' as const,
        'regrant-authority-permission' as const,
        'grant-permission' as const,
        'revoke-permission' as const,
        'regrant-permission' as const,
        'regrant-permission' as const,
      ),
      a: fc.nat(),
      b: fc.nat(),
      // Aim a grant or a revoke at a snapshot item's pair rather than at any pair.
      item: fc.boolean(),
    }),
    { minLength: 2, maxLength: 8 },
  ),
});
type CampaignSpec = typeof campaignArbitrary extends fc.Arbitrary<infer T> ? T : never;

interface World {
  readonly users: TestUser[];
  readonly devices: number[];
  /** Non-owner authorities: id, device, user. */
  readonly authorities: { id: number; device: number; user: number }[];
}

const pick = <T>(items: readonly T[], index: number): T | undefined => items[index % Math.max(items.length, 1)];
/** The distinct items the indexes pick (never none when there are items). */
const chosen = <T>(items: readonly T[], indexes: readonly number[]): T[] => [
  ...new Set(indexes.flatMap((index) => pick(items, index) ?? [])),
];

/** A path the close must leave alone: granted after the snapshot. */
interface NewPath {
  readonly kind: 'a' | 'g';
  readonly id: number;
  readonly user_id: number;
  readonly device_id: number | null;
  readonly code: string;
  readonly authority_id: number | null;
}

describe('access review campaigns, as a property (part 6.16)', () => {
  const schema = jobsSchema();
  let t: TestApp;
  let root: Caller;
  let database: Awaited<ReturnType<typeof createOwnDatabase>>;

  beforeAll(async () => {
    // Its own database: a campaign with a random (or no) scope snapshots and revokes every path
    // in it, other specs' included; and other specs must not see these campaigns. Every helper
    // (actor, sql, startApp) reads the database from this file's environment.
    database = await createOwnDatabase('review_property');
    process.env.ADMIN_API_TEST_DATABASE_URL = database.url;
    t = await startApp({
      widgets: false,
      cachePrefix: testCachePrefix('access-review-property'),
      env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'true', RATE_LIMIT_PER_MINUTE: '1000000' },
    });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  const as = (auth: string) => ({
    get: (path: string) => t.http().get(path).set('Authorization', auth),
    post: (path: string, body: object) => t.http().post(path).set('Authorization', auth).send(body),
    delete: (path: string) => t.http().delete(path).set('Authorization', auth),
  });
  const asRoot = () => as(root.auth);

  async function buildWorld(spec: WorldSpec): Promise<World> {
    const users = await Promise.all(spec.users.map((user) => createUser({ role: user.role })));
    for (const [index, user] of spec.users.entries())
      for (const code of user.grants)
        await sql('INSERT INTO permission_grants (user_id, permission_id, granted_by) VALUES ($1, $2, NULL)', [
          users[index]?.id,
          permissionId(code),
        ]);
    const devices: number[] = [];
    const owners = new Map<number, number>();
    for (const owner of spec.devices) {
      const ownerId = owner === null ? undefined : users[owner % users.length]?.id;
      const device = (await createDevice(ownerId === undefined ? {} : { ownerId })).id;
      devices.push(device);
      if (ownerId !== undefined) owners.set(device, ownerId);
    }
    const authorities: World['authorities'] = [];
    for (const delegate of spec.delegates) {
      const device = pick(devices, delegate.device);
      const user = pick(users, delegate.user);
      if (device === undefined || user === undefined || owners.get(device) === user.id) continue;
      if (authorities.some((each) => each.device === device && each.user === user.id)) continue;
      const id = await createAuthority(device, user.id, { permissions: delegate.permissions });
      authorities.push({ id, device, user: user.id });
    }
    return { users, devices, authorities };
  }

  async function itemsOf(id: number): Promise<Item[]> {
    const items: Item[] = [];
    for (let page = 1; ; page++) {
      const listed = await asRoot().get(`${BASE}/${id}/items?page=${page}&page_size=100`).expect(200);
      items.push(...(listed.body.data as Item[]));
      if (page * 100 >= Number(listed.body.meta.total)) return items;
    }
  }

  /** Every way the access questions say the user is allowed the permission (on the device). */
  async function pathsOf(userId: number, code: string, deviceId: number | null): Promise<Path[]> {
    const device = deviceId === null || !isDeviceScoped(code) ? '' : `&device_id=${deviceId}`;
    const answer = await asRoot()
      .get(`/v1/admin/authz/check?user_id=${userId}&permission=${code}${device}&explain=true`)
      .expect(200);
    return (answer.body.data.paths ?? []) as Path[];
  }

  /** The question that shows an item's (or a new path's) own way through, and whether it does. */
  const questionOf = (item: Item): [number, string, number | null] => [
    item.user_id,
    item.permission_code ?? 'devices.read', // an owner is allowed every device-scoped permission
    item.device_id,
  ];
  const shows = (paths: readonly Path[], item: Pick<Item, 'decided_by' | 'authority_id' | 'grant_id'>): boolean =>
    paths.some((path) =>
      item.decided_by === 'permission_grant'
        ? path.decided_by === 'permission_grant' && path.grant_id === item.grant_id
        : path.decided_by === item.decided_by && path.authority_id === item.authority_id,
    );

  /** Every authority permission and grant row, as it stands (the close must change only its own). */
  async function rows(): Promise<Map<string, { revoked_at: string | null; revoked_by: number | null }>> {
    const found = await sql<{ key: string; revoked_at: string | null; revoked_by: string | null }>(
      `SELECT 'a' || id AS key, revoked_at::text, revoked_by FROM authority_permissions
       UNION ALL SELECT 'g' || id, revoked_at::text, revoked_by FROM permission_grants`,
    );
    return new Map(
      found.map((row) => [
        row.key,
        { revoked_at: row.revoked_at, revoked_by: row.revoked_by === null ? null : Number(row.revoked_by) },
      ]),
    );
  }

  /** One write as root through the API; answers the response after checking its status is one of `allowed`. */
  async function send(
    request: { method: 'post' | 'delete'; path: string; body?: object },
    allowed: readonly number[],
    trail: string[],
  ) {
    const answer = await (request.method === 'delete'
      ? asRoot().delete(request.path)
      : asRoot().post(request.path, request.body ?? {}));
    trail.push(
      `write ${request.method.toUpperCase()} ${request.path} ${JSON.stringify(request.body ?? null)} → ${answer.status} ${answer.body?.error?.code ?? ''}`,
    );
    if (!allowed.includes(answer.status))
      throw new Error(
        `${request.method.toUpperCase()} ${request.path} answered ${answer.status} ${JSON.stringify(answer.body?.error ?? null)}`,
      );
    return answer;
  }

  /**
   * One concurrent write aimed at the world (and at the snapshot's pairs): a grant or a revoke
   * by hand, or a revoke by hand then a grant again of a snapshot item's pair (a new path the
   * close must leave alone). Answers the paths it granted.
   */
  async function write(
    spec: CampaignSpec['writes'][number],
    world: World,
    items: readonly Item[],
    trail: string[],
  ): Promise<NewPath[]> {
    const ours = world.authorities.map((each) => each.id);
    // Never the reviewers' own right (see WRITTEN_AUTHORITY_CODES).
    const authorityItems = items.filter(
      (item) =>
        item.decided_by === 'authority_permission' &&
        ours.includes(item.authority_id ?? 0) &&
        item.permission_code !== DECIDE,
    );
    const grantItems = items.filter(
      (item) =>
        item.decided_by === 'permission_grant' &&
        world.users.some((user) => user.id === item.user_id) &&
        item.permission_code !== DECIDE,
    );
    const newAuthorityPermission = (made: { id: number; authority_id: number; permission_code: string }): NewPath => {
      const authority = world.authorities.find((each) => each.id === Number(made.authority_id));
      return {
        kind: 'a',
        id: Number(made.id),
        user_id: authority?.user ?? 0,
        device_id: authority?.device ?? null,
        code: made.permission_code,
        authority_id: Number(made.authority_id),
      };
    };
    const newGrant = (made: { id: number; user_id: number; permission_code: string }): NewPath => ({
      kind: 'g',
      id: Number(made.id),
      user_id: Number(made.user_id),
      device_id: null,
      code: made.permission_code,
      authority_id: null,
    });
    switch (spec.kind) {
      case 'grant-authority-permission': {
        const aimed = spec.item ? pick(authorityItems, spec.a) : undefined;
        const code = aimed?.permission_code ?? pick(WRITTEN_AUTHORITY_CODES, spec.b) ?? 'devices.read';
        const authority = aimed?.authority_id ?? pick(world.authorities, spec.a)?.id;
        if (authority === undefined) return [];
        const body = { authority_id: authority, permission_id: permissionId(code) };
        const answer = await send({ method: 'post', path: '/v1/admin/authority-permissions', body }, [201, 409], trail);
        return answer.status === 201 ? [newAuthorityPermission(answer.body.data)] : [];
      }
      case 'revoke-authority-permission': {
        const held = await sql<{ id: string }>(
          `SELECT ap.id FROM authority_permissions ap WHERE ap.authority_id = ANY($1::bigint[]) AND ap.permission_id <> $2
           ORDER BY ap.revoked_at IS NULL DESC, ap.id`,
          [ours, permissionId(DECIDE)],
        );
        const target = pick(held, spec.a)?.id;
        if (target !== undefined)
          await send({ method: 'delete', path: `/v1/admin/authority-permissions/${target}` }, [200, 204], trail);
        return [];
      }
      case 'regrant-authority-permission': {
        const aimed = pick(authorityItems, spec.a);
        if (aimed === undefined) return [];
        await send(
          { method: 'delete', path: `/v1/admin/authority-permissions/${aimed.authority_permission_id}` },
          [200, 204],
          trail,
        );
        const body = { authority_id: aimed.authority_id, permission_id: permissionId(aimed.permission_code ?? '') };
        // 409: granted again already (by an earlier write).
        const answer = await send({ method: 'post', path: '/v1/admin/authority-permissions', body }, [201, 409], trail);
        return answer.status === 201 ? [newAuthorityPermission(answer.body.data)] : [];
      }
      case 'grant-permission':
      case 'revoke-permission':
      case 'regrant-permission': {
        const aimed = spec.item || spec.kind === 'regrant-permission' ? pick(grantItems, spec.a) : undefined;
        if (spec.kind === 'regrant-permission' && aimed === undefined) return [];
        const code = aimed?.permission_code ?? pick(WRITTEN_GRANT_CODES, spec.b) ?? 'audit.read';
        const body = { user_id: aimed?.user_id ?? pick(world.users, spec.a)?.id, permission_id: permissionId(code) };
        if (spec.kind !== 'grant-permission')
          await send(
            { method: 'post', path: '/v1/admin/permission-grants/revoke', body: { ...body, reason: 'by hand' } },
            [200, 404],
            trail,
          );
        if (spec.kind === 'revoke-permission') return [];
        const answer = await send(
          { method: 'post', path: '/v1/admin/permission-grants/grant', body: { ...body, reason: 'again' } },
          [201, 409],
          trail,
        );
        return answer.status === 201 ? [newGrant(answer.body.data)] : [];
      }
    }
  }

  const tally = { campaigns: 0, items: 0, decided: 0, refused: 0, revoked: 0, kept: 0, writes: 0, newPaths: 0 };

  async function campaign(world: World, spec: CampaignSpec, trail: string[]): Promise<void> {
    const scope = {
      ...(spec.devices === null ? {} : { device_ids: chosen(world.devices, spec.devices) }),
      ...(spec.codes === null ? {} : { permission_codes: spec.codes }),
      ...(spec.users === null ? {} : { user_ids: chosen(world.users, spec.users).map((user) => user.id) }),
    };
    const created = await asRoot().post(BASE, {
      name: 'review property',
      scope,
      default_decision: spec.defaultDecision,
      due_at: new Date(Date.now() + 7 * DAY).toISOString(),
    });
    expect([created.status, created.body.error ?? null]).toEqual([202, null]);
    const id = Number(created.body.data.id);
    trail.push(`campaign ${id}: scope ${JSON.stringify(scope)}, default ${spec.defaultDecision}`);
    expect((await waitForJob(t, root.auth, created.body.data.job_id)).state).toBe('succeeded');
    const snapshot = await itemsOf(id);
    // The world's part of the snapshot: its live paths in scope, taken before any write below.
    const paths = await sql<{ key: string; user_id: string; device_id: string | null; code: string | null }>(
      `SELECT 'authority_permission/' || ap.id || '/true' AS key, a.user_id, a.device_id, p.code
       FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id JOIN permissions p ON p.id = ap.permission_id
       WHERE a.device_id = ANY($1::bigint[]) AND ap.revoked_at IS NULL
       UNION ALL SELECT 'device_owner/' || a.id || '/false', a.user_id, a.device_id, NULL
       FROM authorities a WHERE a.device_id = ANY($1::bigint[]) AND a.owner
       UNION ALL SELECT 'permission_grant/' || g.id || '/true', g.user_id, NULL, p.code
       FROM permission_grants g JOIN permissions p ON p.id = g.permission_id
       WHERE g.user_id = ANY($2::bigint[]) AND g.revoked_at IS NULL`,
      [world.devices, world.users.map((user) => user.id)],
    );
    const inScope = (path: (typeof paths)[number]): boolean => {
      const device = path.device_id === null ? null : Number(path.device_id);
      if (scope.user_ids !== undefined && !scope.user_ids.includes(Number(path.user_id))) return false;
      if (scope.device_ids !== undefined && (device === null || !scope.device_ids.includes(device))) return false;
      if (scope.permission_codes === undefined) return true;
      // An owner's authority is in unless the scope names only permissions that are not device-scoped.
      return path.code === null
        ? scope.permission_codes.some((code) => isDeviceScoped(code))
        : scope.permission_codes.includes(path.code);
    };
    const keyOf = (item: Item): string =>
      `${item.decided_by}/${item.authority_permission_id ?? item.grant_id ?? item.authority_id}/${item.revocable}`;
    const worldUsers = new Set(world.users.map((user) => user.id));
    expect({
      snapshot: snapshot
        .filter((item) => worldUsers.has(item.user_id))
        .map(keyOf)
        .sort(),
    }).toEqual({
      snapshot: paths
        .filter(inScope)
        .map((path) => path.key)
        .sort(),
    });
    trail.push(
      `items: ${snapshot.map((item) => `${item.id}(${item.decided_by} u${item.user_id} d${item.device_id ?? '-'} ${item.permission_code ?? ''})`).join(' ')}`,
    );

    // Who may decide what, asked before the decisions (the concurrent writes leave that alone).
    const reviewers: { user: { id: number }; auth: string }[] = [
      root,
      ...(await Promise.all(world.users.map(async (user) => ({ user, auth: `Bearer ${await tokenFor(user)}` })))),
    ];
    const mayDecide = new Map<string, boolean>();
    for (const reviewer of reviewers)
      for (const device of [null, ...new Set(snapshot.flatMap((item) => item.device_id ?? []))]) {
        const ways = await pathsOf(reviewer.user.id, DECIDE, device);
        // Without a device: by role or grant only.
        const allowed =
          device === null ? ways.some((way) => way.decided_by !== 'authority_permission') : ways.length > 0;
        mayDecide.set(`${reviewer.user.id}/${device ?? '*'}`, allowed);
      }
    // Every user's role (earlier worlds' users hold grants in this database too), for the rank rule.
    const roles = new Map(
      (await sql<{ id: number; role_id: number }>('SELECT id, role_id FROM users')).map((row) => [
        Number(row.id),
        Number(row.role_id),
      ]),
    );
    const expectedStatus = (reviewer: number, item: Item, decision: string): string => {
      if (mayDecide.get(`${reviewer}/${item.device_id ?? '*'}`) !== true) return 'PERMISSION_DENIED';
      if (item.user_id === reviewer) return 'SELF_ACTION_FORBIDDEN';
      // Revoking a grant is a write on its user: the rank rule of part 5 (a super_admin acts on anyone).
      const rank = (userId: number): number => roles.get(userId) ?? 0;
      if (
        decision === 'revoke' &&
        item.decided_by === 'permission_grant' &&
        rank(reviewer) !== ROLE.super_admin &&
        !outranks(rank(reviewer), rank(item.user_id))
      )
        return 'ROLE_ESCALATION_FORBIDDEN';
      if (decision === 'revoke' && !item.revocable) return 'ACCESS_REVIEW_ITEM_NOT_REVOCABLE';
      return 'decided';
    };

    // The decisions, batch after batch in each lane, while the writes go on beside them.
    // Two reviewers' lanes side by side: within a lane the last decision taken stands; across
    // lanes, whichever committed last.
    type Taken = { decision: 'keep' | 'revoke'; reviewer: number };
    const lanes = [0, 1].map((lane) => spec.batches.filter((_, index) => index % 2 === lane));
    const finals = lanes.map(() => new Map<number, Taken>());
    const decisions = async (lane: number): Promise<void> => {
      for (const batch of lanes[lane] ?? []) {
        const picked = new Map<number, { item: Item; decision: 'keep' | 'revoke' }>();
        for (const { item, decision } of batch.picks) {
          const target = pick(snapshot, item);
          if (target !== undefined && !picked.has(target.id)) picked.set(target.id, { item: target, decision });
        }
        const named = [...picked.values()];
        const first = named[0]?.item;
        if (first === undefined) continue;
        const able = reviewers.filter((each) => mayDecide.get(`${each.user.id}/${first.device_id ?? '*'}`) === true);
        const reviewer = pick(batch.able && able.length > 0 ? able : reviewers, batch.reviewer);
        if (reviewer === undefined) continue;
        const answer = await as(reviewer.auth).post(`${BASE}/${id}/decisions`, {
          items: named.map(({ item, decision }) => ({ item_id: item.id, decision })),
        });
        const got = (answer.body.data?.results ?? []) as { item_id: number; status: string; error: { code: string } }[];
        const statuses = got.map((result) => (result.status === 'decided' ? 'decided' : result.error?.code));
        trail.push(
          `decide as ${reviewer.user.id}: ${named.map(({ item, decision }, index) => `${item.id} ${decision} → ${statuses[index]}`).join(', ')} (${answer.status})`,
        );
        expect(answer.status).toBe(200);
        expect({ reviewer: reviewer.user.id, statuses }).toEqual({
          reviewer: reviewer.user.id,
          statuses: named.map(({ item, decision }) => expectedStatus(reviewer.user.id, item, decision)),
        });
        named.forEach(({ item, decision }, index) => {
          if (statuses[index] === 'decided') {
            finals[lane]?.set(item.id, { decision, reviewer: reviewer.user.id });
            tally.decided++;
          } else tally.refused++;
        });
      }
    };
    const newPaths: NewPath[] = [];
    const writes = async (): Promise<void> => {
      for (const each of spec.writes) {
        newPaths.push(...(await write(each, world, snapshot, trail)));
        tally.writes++;
      }
    };
    await Promise.all([decisions(0), decisions(1), writes()]);
    tally.newPaths += newPaths.length;

    // Before the close: a lane's last decision stands, and the counts count the decisions.
    const decided = await itemsOf(id);
    expect(decided.map((item) => item.id)).toEqual(snapshot.map((item) => item.id));
    const taken = (decision: string | null, reviewer: number | null): string =>
      decision === null ? 'undecided' : `${decision} by ${reviewer}`;
    const standing = decided.map((item) => {
      const candidates = finals.flatMap((final) => final.get(item.id) ?? []);
      return {
        item: item.id,
        taken: taken(item.decision, item.reviewer_id),
        one_of: candidates.length === 0 ? ['undecided'] : candidates.map((each) => taken(each.decision, each.reviewer)),
      };
    });
    expect({ not_standing: standing.filter((each) => !each.one_of.includes(each.taken)) }).toEqual({
      not_standing: [],
    });
    const open = (await asRoot().get(`${BASE}/${id}`).expect(200)).body.data;
    const keep = decided.filter((item) => item.decision === 'keep').length;
    const revoke = decided.filter((item) => item.decision === 'revoke').length;
    expect({ state: open.state, counts: open.counts }).toEqual({
      state: 'open',
      counts: {
        items: decided.length,
        decided: keep + revoke,
        keep,
        revoke,
        undecided: decided.length - keep - revoke,
      },
    });

    // What the close must revoke, and what the access questions answer before it.
    const revoking = (item: Item): boolean => item.revocable && (item.decision ?? spec.defaultDecision) === 'revoke';
    const rowKey = (item: Item): string =>
      item.decided_by === 'permission_grant' ? `g${item.grant_id}` : `a${item.authority_permission_id}`;
    const before = await rows();
    const shownBefore = new Map<number, boolean>();
    for (const item of decided) shownBefore.set(item.id, shows(await pathsOf(...questionOf(item)), item));
    const newShownBefore = new Map<string, boolean>();
    for (const path of newPaths)
      newShownBefore.set(
        `${path.kind}${path.id}`,
        shows(await pathsOf(path.user_id, path.code, path.device_id), asItem(path)),
      );

    const close = await asRoot().post(`${BASE}/${id}/close`, {}).expect(202);
    expect((await waitForJob(t, root.auth, close.body.data.job_id)).state).toBe('succeeded');
    const closed = (await asRoot().get(`${BASE}/${id}`).expect(200)).body.data;
    const revokedCount = decided.filter(revoking).length;
    expect({ state: closed.state, result: closed.result }).toEqual({
      state: 'closed',
      result: { revoked: revokedCount, kept: decided.length - revokedCount, failed: 0 },
    });
    trail.push(`closed: ${JSON.stringify(closed.result)}`);

    // The rows: the close revoked exactly the revoke items' rows still live, and touched nothing else.
    const after = await rows();
    const targets = new Set(decided.filter(revoking).map(rowKey));
    const expectedRows = new Map(before);
    for (const key of targets) {
      const was = before.get(key);
      if (was?.revoked_at === null)
        expectedRows.set(key, { revoked_at: after.get(key)?.revoked_at ?? 'still live', revoked_by: root.user.id });
    }
    const changed = (map: typeof before): string[] =>
      [...map.entries()]
        .filter(([key, row]) => JSON.stringify(before.get(key)) !== JSON.stringify(row) || targets.has(key))
        .map(([key, row]) => `${key}: ${row.revoked_at === null ? 'live' : `revoked by ${row.revoked_by}`}`)
        .sort();
    expect({ rows: changed(after) }).toEqual({ rows: changed(expectedRows) });
    for (const key of targets)
      if (before.get(key)?.revoked_at === null) {
        const [resource, action] = key.startsWith('g')
          ? ['permission_grant', 'permission_grant.revoke']
          : ['authority_permission', 'authority_permission.revoke'];
        const audit = await sql<{ reason: string | null }>(
          'SELECT reason FROM audit_events WHERE resource_type = $1 AND resource_id = $2 AND action = $3',
          [resource, key.slice(1), action],
        );
        expect({ row: key, reasons: audit.map((row) => row.reason) }).toEqual({
          row: key,
          reasons: [`access review ${id}`],
        });
      }

    // The access questions agree: a revoked item's way is gone (unless the same authority holds
    // the permission again by a row granted after the snapshot), a kept item's way that allowed
    // still does, and so does every way granted after the snapshot.
    const liveAgain = new Set(
      (
        await sql<{ authority_id: string; code: string }>(
          `SELECT ap.authority_id, p.code FROM authority_permissions ap JOIN permissions p ON p.id = ap.permission_id
           WHERE ap.revoked_at IS NULL AND (ap.expires_at IS NULL OR ap.expires_at > now())`,
        )
      ).map((row) => `${row.authority_id}/${row.code}`),
    );
    const answers: { item: number; row: string; allowed_before: boolean; allowed_after: boolean }[] = [];
    const wanted: typeof answers = [];
    for (const item of decided) {
      const now = shows(await pathsOf(...questionOf(item)), item);
      const was = shownBefore.get(item.id) ?? false;
      answers.push({ item: item.id, row: rowKey(item), allowed_before: was, allowed_after: now });
      const regranted =
        item.decided_by === 'authority_permission' && liveAgain.has(`${item.authority_id}/${item.permission_code}`);
      wanted.push({
        item: item.id,
        row: rowKey(item),
        allowed_before: was,
        allowed_after: revoking(item) ? regranted : was,
      });
      if (revoking(item)) tally.revoked++;
      else tally.kept++;
    }
    for (const path of newPaths) {
      const key = `${path.kind}${path.id}`;
      const now = shows(await pathsOf(path.user_id, path.code, path.device_id), asItem(path));
      const was = newShownBefore.get(key) ?? false;
      answers.push({ item: 0, row: key, allowed_before: was, allowed_after: now });
      wanted.push({ item: 0, row: key, allowed_before: was, allowed_after: was });
      // Granted after the snapshot and not revoked by hand since: it allowed, and still does.
      if (before.get(key)?.revoked_at === null)
        expect({ row: key, allowed_before: was }).toEqual({ row: key, allowed_before: true });
    }
    expect({ access: answers }).toEqual({ access: wanted });
    tally.campaigns++;
    tally.items += decided.length;
  }

  it('a closed campaign revokes exactly its revoke items, keeps the rest, and leaves later grants alone', async () => {
    const started = Date.now();
    try {
      await fc.assert(
        fc.asyncProperty(worldArbitrary, campaignArbitrary, async (worldSpec, campaignSpec) => {
          const world = await buildWorld(worldSpec);
          const trail: string[] = [
            `world: users ${world.users.map((user) => `${user.id}(role ${user.role_id})`).join(' ')}, devices ${world.devices.join(' ')}, authorities ${world.authorities.map((each) => `${each.id}(d${each.device} u${each.user})`).join(' ')}`,
          ];
          try {
            await campaign(world, campaignSpec, trail);
          } catch (error) {
            throw new Error(
              [
                `Access review property failed (seed ${SEED}; replay with PROPERTY_SEED=${SEED})`,
                `story:\n  ${trail.join('\n  ')}`,
                (error as Error).message,
              ].join('\n'),
              { cause: error },
            );
          }
          if (TRACE) process.stdout.write(`${trail.join('\n')}\n`);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    } catch (error) {
      throw new Error(`Property failed with PROPERTY_SEED=${SEED}: ${(error as Error).message}`, { cause: error });
    }
    process.stdout.write(
      `access-review property: ${tally.campaigns} campaigns, ${tally.items} items (${tally.decided} decisions taken, ` +
        `${tally.refused} refused; ${tally.revoked} revoked, ${tally.kept} kept), ${tally.writes} concurrent writes ` +
        `(${tally.newPaths} new paths), seed ${SEED}, ${Date.now() - started} ms\n`,
    );
  }, 300_000);
});

/** A path granted after the snapshot, as the item it would have been. */
function asItem(path: NewPath): Pick<Item, 'decided_by' | 'authority_id' | 'grant_id'> {
  return path.kind === 'g'
    ? { decided_by: 'permission_grant', authority_id: null, grant_id: path.id }
    : { decided_by: 'authority_permission', authority_id: path.authority_id, grant_id: null };
}
