import { permissionId, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { addMembers, createGroup, trackedActors, unique } from '../support/groups.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { caller } from '../support/requests.js';
import { openReview, REVIEWS, reviewItems } from '../support/access-reviews.js';
import { testCachePrefix } from '../support/test-env.js';

/**
 * Independent adversarial review (of 1abd68f..a1e1f04): groups in access reviews, findings, the
 * device question's group_id= and the access timeline through groups (parts 5, 6.13, 6.16, 6.17,
 * 6.18). Three attacks found defects, now fixed: A2 (a member of a deleted group deciding its
 * right), A8 (group_id= read as "held by" rather than "through"), A13 (group changes in the
 * timeline without group_id).
 */

/** Waits on the database's clock until just past `instant`. */
const pastInstant = (instant: string) =>
  sql('SELECT pg_sleep(greatest(0, extract(epoch FROM ($1::timestamptz - clock_timestamp()))) + 1.05)', [instant]);

const { actor } = trackedActors();
const READ = 'authorities.read';

interface Finding {
  user_id: number | null;
  group_id: number | null;
  device_id: number | null;
  permission_code: string | null;
  decided_by: string;
  grant_id: number | null;
  authority_permission_id: number | null;
  membership_id: number | null;
  granted_at: string;
}
interface TimelineRow {
  change: string;
  cause: string;
  group_id: number | null;
  user_id: number;
  occurred_at: string;
}
interface DecisionResult {
  status: string;
  error: { code: string } | null;
}

describe('attacks: groups in reviews, findings, group_id= and the timeline', () => {
  const app = useApp({
    widgets: false,
    cachePrefix: testCachePrefix('zz-review-attacks'),
    env: { JOBS_SCHEMA: jobsSchema(), JOB_WORKERS: 'true' },
  });
  const root = (): Caller => app.root;
  const call = (who: Caller = root()) => caller(app.t, who);

  const group = (body: object = {}): Promise<number> => createGroup(app.t, root(), body);
  const add = (groupId: number, members: object[], extra: object = {}): Promise<number[]> =>
    addMembers(app.t, root(), groupId, members, extra);
  async function remove(groupId: number, members: object[]): Promise<void> {
    await call().post(`/v1/admin/groups/${groupId}/members/remove`, { members }).expect(200);
  }
  async function groupGrant(groupId: number, code: string): Promise<number> {
    return (
      await call()
        .post('/v1/admin/permission-grants/grant', { group_id: groupId, permission_id: permissionId(code) })
        .expect(201)
    ).body.data.id;
  }
  async function groupAuthority(device: number, groupId: number, codes: string[]): Promise<number> {
    const authority = (await call().post('/v1/admin/authorities', { device_id: device, group_id: groupId }).expect(201))
      .body.data.id;
    for (const code of codes)
      await call()
        .post('/v1/admin/authority-permissions', { authority_id: authority, permission_id: permissionId(code) })
        .expect(201);
    return authority;
  }
  const open = (scope: object, extra: object = {}) =>
    openReview(app.t, root(), { name: unique('zz review'), scope, ...extra });
  async function decide(who: Caller, review: number, items: object[]): Promise<DecisionResult[]> {
    return (await call(who).post(`${REVIEWS}/${review}/decisions`, { items }).expect(200)).body.data.results;
  }
  const outcome = (results: DecisionResult[]) => results.map((r) => [r.status, r.error?.code ?? null]);
  async function close(review: number): Promise<void> {
    const res = await call().post(`${REVIEWS}/${review}/close`, {}).expect(202);
    expect((await waitForJob(app.t, root().auth, res.body.data.job_id)).state).toBe('succeeded');
  }
  // Users the device's own layer allows, unless the query names its ways: every admin of the shared
  // database reads every device by role, more than a page of them while other files run.
  const DEVICE_WAYS = 'via=device_owner,authority_permission,group_authority_permission';
  const usersOn = async (device: number, query: string): Promise<number[]> =>
    (
      await call()
        .get(
          `/v1/admin/devices/${device}/access?permission=${READ}&page_size=100&${query.includes('via=') ? query : `${DEVICE_WAYS}&${query}`}`,
        )
        .expect(200)
    ).body.data.map((row: { user_id: number }) => row.user_id);
  const timeline = async (device: number, user: number): Promise<TimelineRow[]> =>
    (
      await call()
        .get(`/v1/admin/devices/${device}/access-timeline?user_id=${user}&permission=${READ}&sort=occurred_at:asc`)
        .expect(200)
    ).body.data;
  const told = (rows: TimelineRow[]) => rows.map((row) => [row.change, row.cause, row.group_id]);
  const now = async (): Promise<string> => {
    const [row] = await sql<{ at: Date }>('SELECT clock_timestamp() AS at');
    return (row?.at ?? new Date()).toISOString();
  };

  // ---------------------------------------------------------------- self rule through groups

  it('A1 self rule: a member reached only through a nested group, added after the snapshot, may not decide the group’s right', async () => {
    const top = await group();
    const nested = await group();
    await groupGrant(top, 'audit.read');
    const someone = await actor('operator');
    await add(top, [{ user_id: someone.user.id }]);
    const review = await open({ group_ids: [top] });
    const items = await reviewItems(app.t, root(), review.id);
    const grantItem = items.find((item) => item.kind === 'grant')?.id;
    const admin = await actor('admin');
    // The admin decides once before joining (fine), then joins through a nested group and tries again at once.
    expect(outcome(await decide(admin, review.id, [{ item_id: grantItem, decision: 'keep' }]))).toEqual([
      ['decided', null],
    ]);
    await add(nested, [{ user_id: admin.user.id }]);
    await add(top, [{ group_id: nested }]);
    expect(outcome(await decide(admin, review.id, [{ item_id: grantItem, decision: 'keep' }]))).toEqual([
      ['failed', 'SELF_ACTION_FORBIDDEN'],
    ]);
  });

  it('A2 self rule: a member of a deleted group keeps the group’s right by deciding `keep`, then the group is restored (judgement call)', async () => {
    const team = await group();
    await groupGrant(team, 'audit.read');
    const admin = await actor('admin');
    await add(team, [{ user_id: admin.user.id }]);
    const review = await open({ group_ids: [team] }, { default_decision: 'revoke' });
    const grantItem = (await reviewItems(app.t, root(), review.id)).find((item) => item.kind === 'grant')?.id;
    expect(outcome(await decide(admin, review.id, [{ item_id: grantItem, decision: 'keep' }]))).toEqual([
      ['failed', 'SELF_ACTION_FORBIDDEN'],
    ]);
    await call().delete(`/v1/admin/groups/${team}`).expect(200);
    // Its membership is still live and returns with the restore: it "would become" a member again.
    const results = await decide(admin, review.id, [{ item_id: grantItem, decision: 'keep' }]);
    expect(outcome(results)).toEqual([['failed', 'SELF_ACTION_FORBIDDEN']]);
  });

  // ---------------------------------------------------------------- rank

  it('A3 rank: an admin reviewer removes a super_admin’s membership and revokes the group right a super_admin uses (removing is not limited)', async () => {
    const team = await group();
    const grant = await groupGrant(team, 'audit.read');
    const boss = await actor('super_admin');
    const [membership] = await add(team, [{ user_id: boss.user.id }]);
    const review = await open({ group_ids: [team] });
    const items = await reviewItems(app.t, root(), review.id);
    const admin = await actor('admin');
    const results = await decide(admin, review.id, [
      { item_id: items.find((item) => item.kind === 'membership')?.id, decision: 'revoke' },
      { item_id: items.find((item) => item.kind === 'grant')?.id, decision: 'revoke' },
    ]);
    expect(outcome(results)).toEqual([
      ['decided', null],
      ['decided', null],
    ]);
    await close(review.id);
    const [m] = await sql<{ removed_at: Date | null }>('SELECT removed_at FROM group_memberships WHERE id = $1', [
      membership,
    ]);
    expect(m?.removed_at).not.toBeNull();
    const [g] = await sql<{ revoked_at: Date | null }>('SELECT revoked_at FROM permission_grants WHERE id = $1', [
      grant,
    ]);
    expect(g?.revoked_at).not.toBeNull();
  });

  // ---------------------------------------------------------------- close vs manual changes

  it('A4 a membership removed and re-added by hand before the close: the close does not remove the new membership', async () => {
    const team = await group();
    await groupGrant(team, 'audit.read');
    const user = await actor('operator');
    const [first] = await add(team, [{ user_id: user.user.id }]);
    const review = await open({ group_ids: [team] });
    const item = (await reviewItems(app.t, root(), review.id)).find((row) => row.kind === 'membership');
    expect(item?.membership_id).toBe(first);
    expect(outcome(await decide(root(), review.id, [{ item_id: item?.id, decision: 'revoke' }]))).toEqual([
      ['decided', null],
    ]);
    await remove(team, [{ user_id: user.user.id }]);
    const [second] = await add(team, [{ user_id: user.user.id }]);
    expect(second).not.toBe(first);
    await close(review.id);
    const [row] = await sql<{ removed_at: Date | null }>('SELECT removed_at FROM group_memberships WHERE id = $1', [
      second,
    ]);
    expect(row?.removed_at).toBeNull();
    // The membership item counts as revoked (the path it named is gone); the group's grant was kept (default).
    expect((await call().get(`${REVIEWS}/${review.id}`).expect(200)).body.data.result).toEqual({
      revoked: 1,
      kept: 1,
      failed: 0,
    });
    const closeRemovals = await sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_events WHERE action = 'group.member_remove' AND reason = $1",
      [`access review ${review.id}`],
    );
    expect(closeRemovals[0]?.n).toBe(0);
  });

  it('A5 items of a user and a group deleted after the snapshot: the close succeeds; the deleted group’s right is revoked and does not return with its restore', async () => {
    const team = await group();
    const grant = await groupGrant(team, 'audit.read');
    const user = await actor('operator');
    const [membership] = await add(team, [{ user_id: user.user.id }]);
    const survivor = await actor('operator');
    await add(team, [{ user_id: survivor.user.id }]);
    const review = await open({ group_ids: [team] }, { default_decision: 'revoke' });
    const items = await reviewItems(app.t, root(), review.id);
    expect(items.length).toBe(3);
    // Keep the survivor's membership.
    const survivorItem = items.find((row) => row.user_id === survivor.user.id)?.id;
    expect(outcome(await decide(root(), review.id, [{ item_id: survivorItem, decision: 'keep' }]))).toEqual([
      ['decided', null],
    ]);
    await call().delete(`/v1/admin/users/${user.user.id}`).expect(200);
    await call().delete(`/v1/admin/groups/${team}`).expect(200);
    await close(review.id);
    expect((await call().get(`${REVIEWS}/${review.id}`).expect(200)).body.data.result).toEqual({
      revoked: 2,
      kept: 1,
      failed: 0,
    });
    const [g] = await sql<{ revoked_at: Date | null }>('SELECT revoked_at FROM permission_grants WHERE id = $1', [
      grant,
    ]);
    expect(g?.revoked_at).not.toBeNull();
    const [m] = await sql<{ removed_at: Date | null }>('SELECT removed_at FROM group_memberships WHERE id = $1', [
      membership,
    ]);
    expect(m?.removed_at).not.toBeNull();
    await call().post(`/v1/admin/groups/${team}/restore`).expect(200);
    const check = await call()
      .get(`/v1/admin/authz/check?user_id=${survivor.user.id}&permission=audit.read`)
      .expect(200);
    expect(check.body.data.allowed).toBe(false);
  });

  // ---------------------------------------------------------------- findings

  it('A6 findings with group rights and memberships: pages in both orders add up to the total, with and without count=exact, and with device_id', async () => {
    const device = (await createDevice()).id;
    const team = await group();
    for (const code of ['audit.read', 'jobs.read', 'users.read']) await groupGrant(team, code);
    await groupAuthority(device, team, [READ, 'authorities.update']);
    const members = [await actor('operator'), await actor('operator'), await actor('operator'), await actor('viewer')];
    // Two in one call (a tie on added_at), two alone.
    await add(team, [{ user_id: members[0]?.user.id }, { user_id: members[1]?.user.id }]);
    await add(team, [{ user_id: members[2]?.user.id }]);
    await add(team, [{ user_id: members[3]?.user.id }]);
    const key = (f: Finding) => `${f.decided_by}/${f.grant_id ?? f.authority_permission_id ?? f.membership_id}`;
    const read = async (query: string) => {
      const res = await call().get(`/v1/admin/access-findings?${query}`).expect(200);
      return { rows: res.body.data as Finding[], total: res.body.meta.total as number };
    };
    for (const base of [`group_id=${team}`, `group_id=${team}&device_id=${device}`]) {
      const all = await read(`${base}&page_size=100&count=exact`);
      const expected = base.includes('device_id') ? 6 : 9;
      expect(all.total).toBe(expected);
      expect(all.rows.length).toBe(expected);
      for (const sort of ['granted_at:asc', 'granted_at:desc'])
        for (const count of ['exact', 'auto']) {
          const seen: string[] = [];
          for (let page = 1; page <= 6; page += 1) {
            const got = await read(`${base}&page_size=2&page=${page}&sort=${sort}&count=${count}`);
            expect(got.total).toBe(expected);
            seen.push(...got.rows.map(key));
          }
          expect(seen.length).toBe(expected);
          expect(new Set(seen).size).toBe(expected);
          const stamps = (await read(`${base}&page_size=100&sort=${sort}`)).rows.map((row) => row.granted_at);
          const sorted = [...stamps].sort();
          expect(stamps).toEqual(sort.endsWith('asc') ? sorted : sorted.reverse());
        }
    }
    // user_id and group_id together: that user's membership in that group, nothing else.
    const both = await read(`group_id=${team}&user_id=${members[2]?.user.id}&count=exact`);
    expect(both.rows.map((row) => [row.decided_by, row.user_id, row.group_id])).toEqual([
      ['group_membership', members[2]?.user.id, team],
    ]);
    expect(both.total).toBe(1);
    // A page past the end: no rows, the real total.
    const past = await read(`group_id=${team}&page=50&page_size=100`);
    expect(past).toEqual({ rows: [], total: 9 });
  });

  it('A7 hostile values for the new filters are 400s, never 500s', async () => {
    for (const bad of ['0', '-1', 'abc', '1.5', '1e3', '99999999999999999999', '1%2C2', '%20']) {
      const res = await call().get(`/v1/admin/access-findings?group_id=${bad}`);
      expect([bad, res.status]).toEqual([bad, 400]);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
    const twice = await call().get('/v1/admin/access-findings?group_id=1&group_id=2');
    expect(twice.status).toBe(400);
    // A group that does not exist: a filter, nothing matches.
    const missing = await call().get('/v1/admin/access-findings?group_id=999999999999999&count=exact').expect(200);
    expect(missing.body.meta.total).toBe(0);
    const review = await open({ group_ids: [await group()] });
    for (const query of ['group_id=99999999999999999999', 'kind=memberships', 'group_id=abc', 'kind=']) {
      const res = await call().get(`${REVIEWS}/${review.id}/items?${query}`);
      expect([query, res.status]).toEqual([query, 400]);
    }
    for (const scope of [{ group_ids: [] }, { group_ids: [1.5] }, { group_ids: ['1'] }, { group_ids: [0] }]) {
      const res = await call().post(REVIEWS, {
        name: 'x',
        scope,
        default_decision: 'keep',
        due_at: new Date(Date.now() + 86_400_000).toISOString(),
      });
      expect([JSON.stringify(scope), res.status]).toEqual([JSON.stringify(scope), 400]);
    }
    // A deleted group in the scope: 404.
    const gone = await group();
    await call().delete(`/v1/admin/groups/${gone}`).expect(200);
    const deleted = await call().post(REVIEWS, {
      name: 'x',
      scope: { group_ids: [gone] },
      default_decision: 'keep',
      due_at: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(deleted.status).toBe(404);
  });

  // ---------------------------------------------------------------- device question, group_id=

  it('A8 group_id= keeps "paths through that group": a nested group’s members reach the right held above it', async () => {
    const user = await actor('operator');
    const device = (await createDevice()).id;
    const top = await group();
    const nested = await group();
    await groupAuthority(device, top, [READ]);
    const before = await now();
    await add(nested, [{ user_id: user.user.id }]);
    await add(top, [{ group_id: nested }]);
    // The path is {decided_by: group_authority_permission, group_id: top, via: [nested, top]}.
    const check = await call()
      .get(`/v1/admin/authz/check?user_id=${user.user.id}&permission=${READ}&device_id=${device}&explain=true`)
      .expect(200);
    expect(check.body.data.paths[0].via).toEqual([nested, top]);
    expect(await usersOn(device, `group_id=${top}`)).toEqual([user.user.id]);
    // Through `nested`: per part 6.13 "group_id= keeps only paths through that group".
    const res = await call()
      .get(`/v1/admin/devices/${device}/access?permission=${READ}&group_id=${nested}&count=exact`)
      .expect(200);
    expect(res.body.data.map((row: { user_id: number }) => row.user_id)).toEqual([user.user.id]);
    expect(res.body.meta.total).toBe(1);
    expect(await usersOn(device, `group_id=${top}&at=${encodeURIComponent(before)}`)).toEqual([]);
  });

  it('A9 group_id= totals equal rows (count=exact), now and at= in the past', async () => {
    const device = (await createDevice()).id;
    const team = await group();
    await groupAuthority(device, team, [READ]);
    const users = [await actor('operator'), await actor('operator'), await actor('operator')];
    await add(
      team,
      users.map((u) => ({ user_id: u.user.id })),
    );
    const middle = await now();
    await remove(team, [{ user_id: users[0]?.user.id }]);
    // a member-role user in the team is not admissible
    const plain = await actor('member');
    await add(team, [{ user_id: plain.user.id }]);
    for (const [query, n] of [
      [`group_id=${team}`, 2],
      [`group_id=${team}&at=${encodeURIComponent(middle)}`, 3],
    ] as const) {
      const res = await call()
        .get(`/v1/admin/devices/${device}/access?permission=${READ}&${query}&count=exact&page_size=1`)
        .expect(200);
      expect([query, res.body.meta.total]).toEqual([query, n]);
      const seen: number[] = [];
      for (let page = 1; page <= n + 1; page += 1) {
        const p = await call()
          .get(`/v1/admin/devices/${device}/access?permission=${READ}&${query}&count=exact&page_size=1&page=${page}`)
          .expect(200);
        seen.push(...p.body.data.map((row: { user_id: number }) => row.user_id));
      }
      expect(seen.length).toBe(n);
      expect(seen).not.toContain(plain.user.id);
    }
  });

  // ---------------------------------------------------------------- timeline vs access questions

  it('A10 timeline: five levels of nesting and a refused cycle; the timeline agrees with the device question', async () => {
    const user = await actor('operator');
    const device = (await createDevice()).id;
    const g = [await group(), await group(), await group(), await group(), await group()];
    await groupAuthority(device, g[0] ?? 0, [READ]);
    await add(g[4] ?? 0, [{ user_id: user.user.id }]);
    for (let i = 3; i >= 0; i -= 1) await add(g[i] ?? 0, [{ group_id: g[i + 1] }]);
    expect(await usersOn(device, '')).toContain(user.user.id);
    const cycle = await call()
      .post(`/v1/admin/groups/${g[4]}/members`, { members: [{ group_id: g[0] }] })
      .expect(200);
    expect(cycle.body.data.results[0].error.code).toBe('GROUP_NESTING_INVALID');
    expect(told(await timeline(device, user.user.id))).toEqual([['gained', 'group_member_added', g[0]]]);
    // Break the chain in the middle: lost, through the group holding the right.
    await remove(g[2] ?? 0, [{ group_id: g[3] }]);
    expect(await usersOn(device, '')).not.toContain(user.user.id);
    expect(told(await timeline(device, user.user.id))).toEqual([
      ['gained', 'group_member_added', g[0]],
      ['lost', 'group_member_removed', g[0]],
    ]);
  });

  it('A11 timeline: a membership that expires is a loss `expired` through the group; the question agrees now and at=', async () => {
    const user = await actor('operator');
    const device = (await createDevice()).id;
    const team = await group();
    await groupAuthority(device, team, [READ]);
    const ends = new Date(Date.now() + 3000).toISOString();
    await add(team, [{ user_id: user.user.id }], { expires_at: ends });
    const during = await now();
    await pastInstant(ends);
    expect(await usersOn(device, '')).not.toContain(user.user.id);
    expect(await usersOn(device, `at=${encodeURIComponent(during)}`)).toContain(user.user.id);
    expect(told(await timeline(device, user.user.id))).toEqual([
      ['gained', 'group_member_added', team],
      ['lost', 'expired', team],
    ]);
  });

  it('A12 timeline: a group deleted, a member removed while deleted (by a review close: the API 404s it), then restored: the removed member does not come back', async () => {
    const [gone, stays] = [await actor('operator'), await actor('operator')];
    const device = (await createDevice()).id;
    const team = await group();
    await groupAuthority(device, team, [READ]);
    await add(team, [{ user_id: gone.user.id }, { user_id: stays.user.id }]);
    const review = await open({ group_ids: [team] });
    const item = (await reviewItems(app.t, root(), review.id)).find(
      (row) => row.kind === 'membership' && row.user_id === gone.user.id,
    );
    expect(outcome(await decide(root(), review.id, [{ item_id: item?.id, decision: 'revoke' }]))).toEqual([
      ['decided', null],
    ]);
    await call().delete(`/v1/admin/groups/${team}`).expect(200);
    // By hand: a deleted group's members cannot be changed (part 3: actions on a deleted record are 404).
    await call()
      .post(`/v1/admin/groups/${team}/members/remove`, { members: [{ user_id: gone.user.id }] })
      .expect(404);
    await close(review.id);
    await call().post(`/v1/admin/groups/${team}/restore`).expect(200);
    const listed = await usersOn(device, '');
    expect(listed).toContain(stays.user.id);
    expect(listed).not.toContain(gone.user.id);
    expect(told(await timeline(device, gone.user.id))).toEqual([
      ['gained', 'group_member_added', team],
      ['lost', 'group_deleted', team],
    ]);
    expect(told(await timeline(device, stays.user.id))).toEqual([
      ['gained', 'group_member_added', team],
      ['lost', 'group_deleted', team],
      ['gained', 'group_restored', team],
    ]);
  });

  it('A13 timeline: a group’s role change makes a member-role user’s own authority usable; the entry names the group', async () => {
    const plain = await actor('member');
    const device = (await createDevice()).id;
    await createAuthority(device, plain.user.id, { permissions: [READ] });
    const roles = await group();
    await add(roles, [{ user_id: plain.user.id }]);
    expect(await usersOn(device, '')).not.toContain(plain.user.id);
    await call().patch(`/v1/admin/groups/${roles}`, { role_id: 3 }).expect(200);
    expect(await usersOn(device, '')).toContain(plain.user.id);
    await call().delete(`/v1/admin/groups/${roles}`).expect(200);
    expect(await usersOn(device, '')).not.toContain(plain.user.id);
    // "an entry caused through a group carries group_id" (part 6.13)
    expect(told(await timeline(device, plain.user.id))).toEqual([
      ['gained', 'group_role_changed', roles],
      ['lost', 'group_deleted', roles],
    ]);
  });

  it('A14 timeline: a nesting (group in group) that expires: the nested member loses the right `expired`, through the group above', async () => {
    const user = await actor('operator');
    const device = (await createDevice()).id;
    const top = await group();
    const nested = await group();
    await groupAuthority(device, top, [READ]);
    await add(nested, [{ user_id: user.user.id }]);
    const ends = new Date(Date.now() + 3000).toISOString();
    await add(top, [{ group_id: nested }], { expires_at: ends });
    await pastInstant(ends);
    expect(await usersOn(device, '')).not.toContain(user.user.id);
    expect(told(await timeline(device, user.user.id))).toEqual([
      ['gained', 'group_member_added', top],
      ['lost', 'expired', top],
    ]);
  });

  it('A15 a cycle over time (A in B, removed, then B in A) and group_id= with via=role and at=: no 500', async () => {
    // A member-role user: its effective role is the viewer role B confers (viewer holds authorities.read).
    const user = await actor('member');
    const device = (await createDevice()).id;
    const a = await group();
    const b = await group({ role_id: 4 });
    await groupAuthority(device, a, [READ]);
    await add(b, [{ user_id: user.user.id }]);
    const t0 = await now();
    await add(a, [{ group_id: b }]);
    await remove(a, [{ group_id: b }]);
    await add(b, [{ group_id: a }]);
    await add(a, [{ user_id: user.user.id }]);
    const rows = await timeline(device, user.user.id);
    expect(rows.length).toBeGreaterThan(0);
    for (const query of [
      `group_id=${b}&via=role`,
      `group_id=${b}&via=role&at=${encodeURIComponent(t0)}`,
      `group_id=${a}&via=role,group_authority_permission&at=${encodeURIComponent(t0)}&count=exact`,
    ])
      await call().get(`/v1/admin/devices/${device}/access?permission=${READ}&${query}`).expect(200);
    expect(await usersOn(device, `group_id=${b}&via=role`)).toEqual([user.user.id]);
  });

  it('A16 last use through a nested group marks the member’s own membership (the foot of the chain) and takes it off the findings', async () => {
    const { AccessUses } = await import('../../src/access-model/access-uses.js');
    const user = await actor('operator');
    const device = (await createDevice()).id;
    const top = await group();
    const nested = await group();
    const authority = await groupAuthority(device, top, [READ]);
    const [membership] = await add(nested, [{ user_id: user.user.id }]);
    await add(top, [{ group_id: nested }]);
    const mine = async () =>
      (await call().get(`/v1/admin/access-findings?user_id=${user.user.id}&count=exact`).expect(200)).body.data.map(
        (row: Finding) => [row.decided_by, row.group_id, row.membership_id],
      );
    expect(await mine()).toEqual([['group_membership', nested, membership]]);
    await call(user).get(`/v1/admin/authorities/${authority}`).expect(200);
    await app.t.app.get(AccessUses).flush();
    expect(await mine()).toEqual([]);
  });

  it('A17 rank and roles: an admin reviewer removes a member of a super_admin-role group (a role taken); the manual remove agrees', async () => {
    const supers = await group({ role_id: 1 });
    const [x, y] = [await actor('member'), await actor('member')];
    const [mx] = await add(supers, [{ user_id: x.user.id }, { user_id: y.user.id }]);
    const admin = await actor('admin');
    // By hand: removing is not limited (part 5).
    const manual = await call(admin)
      .post(`/v1/admin/groups/${supers}/members/remove`, { members: [{ user_id: y.user.id }] })
      .expect(200);
    expect(manual.body.data.results[0].status).toBe('removed');
    const review = await open({ group_ids: [supers] });
    const items = await reviewItems(app.t, root(), review.id);
    expect(items.map((item) => [item.kind, item.user_id])).toEqual([['membership', x.user.id]]);
    expect(outcome(await decide(admin, review.id, [{ item_id: items[0]?.id, decision: 'revoke' }]))).toEqual([
      ['decided', null],
    ]);
    await close(review.id);
    const [row] = await sql<{ removed_at: Date | null }>('SELECT removed_at FROM group_memberships WHERE id = $1', [
      mx,
    ]);
    expect(row?.removed_at).not.toBeNull();
    expect((await call().get(`/v1/admin/users/${x.user.id}`).expect(200)).body.data.effective_role_id).toBe(5);
  });
});
