import { AccessUses } from '../../src/access-model/access-uses.js';
import { permissionId, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createDevice } from '../support/devices.js';
import { addMembers, createGroup, trackedActors, unique } from '../support/groups.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { caller } from '../support/requests.js';
import { openReview, REVIEWS, reviewItems, type ReviewItem } from '../support/access-reviews.js';
import { testCachePrefix } from '../support/test-env.js';

/**
 * Groups in access reviews and findings (part 6.16, v1.3): a campaign's items include the rights
 * groups hold and users' memberships in groups that confer something; a revoke of a membership
 * removes the member at close; findings list unused group rights and unused memberships.
 */

const { actor } = trackedActors();

interface Finding {
  user_id: number | null;
  group_id: number | null;
  device_id: number | null;
  permission_code: string | null;
  decided_by: string;
  grant_id: number | null;
  authority_permission_id: number | null;
  membership_id: number | null;
  last_used_at: string | null;
}

/**
 * A device with its owner; team T holds an authority on it (authorities.read) and a grant of
 * audit.read; group Inner sits in T; u1 is in T, u2 in Inner; group R carries the viewer role and
 * holds u3; group E confers nothing and holds u4.
 */
interface World {
  device: number;
  owner: Caller;
  team: number;
  inner: number;
  roleGroup: number;
  empty: number;
  authority: number;
  ap: number;
  grant: number;
  u1: Caller;
  u2: Caller;
  u3: Caller;
  u4: Caller;
  membership: Record<'u1' | 'u2' | 'u3' | 'u4', number>;
}

describe('groups in access reviews and findings', () => {
  const app = useApp({
    widgets: false,
    cachePrefix: testCachePrefix('group-reviews'),
    env: { JOBS_SCHEMA: jobsSchema(), JOB_WORKERS: 'true' },
  });
  const root = (): Caller => app.root;
  const call = (who: Caller = root()) => caller(app.t, who);

  const group = (body: object = {}): Promise<number> => createGroup(app.t, root(), body);
  const add = (groupId: number, members: object[]): Promise<number[]> => addMembers(app.t, root(), groupId, members);

  async function world(): Promise<World> {
    const owner = await actor('operator');
    const [u1, u2, u3, u4] = [await actor('operator'), await actor('operator'), await actor('member'), await actor()];
    const device = (await createDevice({ ownerId: owner.user.id })).id;
    const [team, inner, roleGroup, empty] = [await group(), await group(), await group({ role_id: 4 }), await group()];
    const authority = (await call().post('/v1/admin/authorities', { device_id: device, group_id: team }).expect(201))
      .body.data.id;
    const ap = (
      await call()
        .post('/v1/admin/authority-permissions', {
          authority_id: authority,
          permission_id: permissionId('authorities.read'),
        })
        .expect(201)
    ).body.data.id;
    const grant = (
      await call()
        .post('/v1/admin/permission-grants/grant', { group_id: team, permission_id: permissionId('audit.read') })
        .expect(201)
    ).body.data.id;
    await add(team, [{ group_id: inner }]);
    const [m1] = await add(team, [{ user_id: u1.user.id }]);
    const [m2] = await add(inner, [{ user_id: u2.user.id }]);
    const [m3] = await add(roleGroup, [{ user_id: u3.user.id }]);
    const [m4] = await add(empty, [{ user_id: u4.user.id }]);
    return {
      device,
      owner,
      team,
      inner,
      roleGroup,
      empty,
      authority,
      ap,
      grant,
      u1,
      u2,
      u3,
      u4,
      membership: { u1: m1 ?? 0, u2: m2 ?? 0, u3: m3 ?? 0, u4: m4 ?? 0 },
    };
  }

  const open = (scope: object, extra: object = {}) =>
    openReview(app.t, root(), { name: unique('group review'), scope, ...extra });
  const shape = (item: ReviewItem) => [item.kind, item.decided_by, item.user_id, item.group_id];
  const byShape = (a: unknown[], b: unknown[]) => JSON.stringify(a).localeCompare(JSON.stringify(b));

  it('a campaign over groups lists their rights and the memberships that confer something, each with kind and group_id', async () => {
    const w = await world();
    const review = await open({ group_ids: [w.team, w.inner, w.roleGroup, w.empty] });
    const items = await reviewItems(app.t, root(), review.id);
    expect(items.map(shape).sort(byShape)).toEqual(
      [
        ['authority_permission', 'group_authority_permission', null, w.team],
        ['grant', 'group_permission_grant', null, w.team],
        ['membership', 'group_membership', w.u1.user.id, w.team],
        ['membership', 'group_membership', w.u2.user.id, w.inner],
        ['membership', 'group_membership', w.u3.user.id, w.roleGroup],
      ].sort(byShape),
    );
    const ap = items.find((item) => item.kind === 'authority_permission');
    expect(ap).toMatchObject({
      device_id: w.device,
      permission_code: 'authorities.read',
      authority_id: w.authority,
      authority_permission_id: w.ap,
      membership_id: null,
      revocable: true,
      recommendation: 'revoke',
    });
    const inner = items.find((item) => item.user_id === w.u2.user.id);
    expect(inner).toMatchObject({ device_id: null, permission_code: null, membership_id: w.membership.u2 });
    // Filters by the new fields.
    expect((await reviewItems(app.t, root(), review.id, '&kind=membership')).length).toBe(3);
    expect((await reviewItems(app.t, root(), review.id, `&group_id=${w.team}`)).map(shape).sort(byShape)).toEqual(
      [
        ['authority_permission', 'group_authority_permission', null, w.team],
        ['grant', 'group_permission_grant', null, w.team],
        ['membership', 'group_membership', w.u1.user.id, w.team],
      ].sort(byShape),
    );
  });

  it('a scope of users keeps their memberships, not the groups’ rights; a scope of permissions keeps the memberships that confer one', async () => {
    const w = await world();
    const users = await open({ user_ids: [w.u1.user.id, w.u4.user.id] });
    expect((await reviewItems(app.t, root(), users.id)).map(shape)).toEqual([
      ['membership', 'group_membership', w.u1.user.id, w.team],
    ]);
    // audit.read: T's grant reaches u1 and u2 (through Inner); the viewer role of R does not hold it.
    const audit = await open({ permission_codes: ['audit.read'], group_ids: [w.team, w.inner, w.roleGroup] });
    expect((await reviewItems(app.t, root(), audit.id)).map(shape).sort(byShape)).toEqual(
      [
        ['grant', 'group_permission_grant', null, w.team],
        ['membership', 'group_membership', w.u1.user.id, w.team],
        ['membership', 'group_membership', w.u2.user.id, w.inner],
      ].sort(byShape),
    );
    // Devices named: the group authority's right on the device and the memberships it reaches; no
    // grants and no roles (they hold everywhere, not on a device).
    const onDevice = await open({ device_ids: [w.device] });
    const queries = [w.owner, w.u1, w.u2, w.u3, w.u4].map((who) => `&user_id=${who.user.id}`);
    const listed: ReviewItem[] = [];
    for (const query of [...queries, `&group_id=${w.team}&kind=authority_permission`])
      listed.push(...(await reviewItems(app.t, root(), onDevice.id, query)));
    expect(listed.map(shape).sort(byShape)).toEqual(
      [
        ['authority_permission', 'group_authority_permission', null, w.team],
        ['membership', 'group_membership', w.u1.user.id, w.team],
        ['membership', 'group_membership', w.u2.user.id, w.inner],
        ['owner', 'device_owner', w.owner.user.id, null],
      ].sort(byShape),
    );
    // An unknown group is the campaign's 404, before anything is written.
    const missing = await call()
      .post(REVIEWS, { name: 'x', scope: { group_ids: [9_000_000_000] }, default_decision: 'keep', due_at: soon() })
      .expect(404);
    expect(missing.body.error.code).toBe('GROUP_NOT_FOUND');
  });

  it('who may decide: a member may not judge its group’s right nor its own membership; a device’s reviewer may not judge a membership', async () => {
    const w = await world();
    const review = await open({ group_ids: [w.team, w.inner] });
    const items = await reviewItems(app.t, root(), review.id);
    const item = (kind: string, user: number | null = null) =>
      items.find((candidate) => candidate.kind === kind && candidate.user_id === user)?.id;
    // An admin in the team: it reaches T's rights, and u2's membership is not its own.
    const admin = await actor('admin');
    await add(w.team, [{ user_id: admin.user.id }]);
    const decided = await call(admin)
      .post(`${REVIEWS}/${review.id}/decisions`, {
        items: [
          { item_id: item('grant'), decision: 'revoke' },
          { item_id: item('authority_permission'), decision: 'revoke' },
          { item_id: item('membership', w.u2.user.id), decision: 'revoke' },
        ],
      })
      .expect(200);
    expect(
      decided.body.data.results.map((result: { status: string; error: { code: string } | null }) => [
        result.status,
        result.error?.code ?? null,
      ]),
    ).toEqual([
      ['failed', 'SELF_ACTION_FORBIDDEN'],
      ['failed', 'SELF_ACTION_FORBIDDEN'],
      ['decided', null],
    ]);
    // u1 as an admin now (by a grant of decide) still may not decide its own membership.
    await call()
      .post('/v1/admin/permission-grants/grant', {
        user_id: w.u1.user.id,
        permission_id: permissionId('access_reviews.decide'),
      })
      .expect(201);
    const own = await call(w.u1)
      .post(`${REVIEWS}/${review.id}/decisions`, {
        items: [{ item_id: item('membership', w.u1.user.id), decision: 'revoke' }],
      })
      .expect(200);
    expect(own.body.data.results[0].error.code).toBe('SELF_ACTION_FORBIDDEN');
    // The device's owner decides on its device: the group's authority permission, not a membership.
    const owner = await call(w.owner)
      .post(`${REVIEWS}/${review.id}/decisions`, {
        items: [
          { item_id: item('authority_permission'), decision: 'keep' },
          { item_id: item('membership', w.u1.user.id), decision: 'keep' },
        ],
      })
      .expect(200);
    expect(owner.body.data.results.map((result: { status: string }) => result.status)).toEqual(['decided', 'failed']);
    expect(owner.body.data.results[1].error.code).toBe('PERMISSION_DENIED');
    // The owner sees only its device's items: the group authority permission.
    expect((await reviewItems(app.t, w.owner, review.id)).map((seen) => seen.kind)).toEqual(['authority_permission']);
  });

  it('the close removes revoked members and revokes the group’s right, with audit and access events; kept items stay', async () => {
    const w = await world();
    const review = await open({ group_ids: [w.team, w.inner] });
    const items = await reviewItems(app.t, root(), review.id);
    const pick = (kind: string, user: number | null = null) =>
      items.find((candidate) => candidate.kind === kind && candidate.user_id === user)?.id;
    await call()
      .post(`${REVIEWS}/${review.id}/decisions`, {
        items: [
          { item_id: pick('membership', w.u2.user.id), decision: 'revoke', note: 'left the night shift' },
          { item_id: pick('grant'), decision: 'revoke' },
          { item_id: pick('authority_permission'), decision: 'keep' },
          { item_id: pick('membership', w.u1.user.id), decision: 'keep' },
        ],
      })
      .expect(200);
    // u2 holds authorities.read on the device through Inner ⊂ T before the close.
    const listed = async (): Promise<number[]> =>
      (
        await call()
          .get(`/v1/admin/devices/${w.device}/access?permission=authorities.read&via=group_authority_permission`)
          .expect(200)
      ).body.data.map((row: { user_id: number }) => row.user_id);
    expect(await listed()).toEqual(expect.arrayContaining([w.u1.user.id, w.u2.user.id]));

    const close = await call().post(`${REVIEWS}/${review.id}/close`, {}).expect(202);
    expect((await waitForJob(app.t, root().auth, close.body.data.job_id)).state).toBe('succeeded');
    const closed = (await call().get(`${REVIEWS}/${review.id}`).expect(200)).body.data;
    expect(closed.result).toEqual({ revoked: 2, kept: 2, failed: 0 });

    const [membership] = await sql<{ removed_at: Date | null; remove_reason: string | null; removed_by: string }>(
      'SELECT removed_at, remove_reason, removed_by FROM group_memberships WHERE id = $1',
      [w.membership.u2],
    );
    expect(membership?.removed_at).not.toBeNull();
    expect(membership?.remove_reason).toBe(`access review ${review.id}`);
    expect(Number(membership?.removed_by)).toBe(root().user.id);
    const [grant] = await sql<{ revoked_at: Date | null; revoke_reason: string | null }>(
      'SELECT revoked_at, revoke_reason FROM permission_grants WHERE id = $1',
      [w.grant],
    );
    expect(grant?.revoked_at).not.toBeNull();
    expect(grant?.revoke_reason).toBe(`access review ${review.id}`);
    const audits = await sql<{ action: string; reason: string }>(
      `SELECT action, reason FROM audit_events WHERE reason = $1 ORDER BY id`,
      [`access review ${review.id}`],
    );
    expect(audits.map((row) => row.action).sort()).toEqual(['group.member_remove', 'permission_grant.revoke']);
    // u2 lost the device right (and audit.read through T); u1 kept the device right and lost audit.read.
    expect(await listed()).toContain(w.u1.user.id);
    expect(await listed()).not.toContain(w.u2.user.id);
    const lost = await sql<{ user_id: string; device_id: string | null; permission_code: string }>(
      `SELECT data->>'user_id' AS user_id, data->>'device_id' AS device_id, data->>'permission_code' AS permission_code
       FROM events WHERE type = 'access.lost' AND (data->>'user_id')::bigint = ANY($1::bigint[]) ORDER BY id`,
      [[w.u1.user.id, w.u2.user.id]],
    );
    const seen = lost.map((row) => `${row.user_id}/${row.device_id ?? '*'}/${row.permission_code}`).sort();
    expect(seen).toEqual(
      [
        `${w.u1.user.id}/*/audit.read`,
        `${w.u2.user.id}/*/audit.read`,
        `${w.u2.user.id}/${w.device}/authorities.read`,
      ].sort(),
    );
    // A second close of a closed campaign is a conflict; nothing is written again.
    await call().post(`${REVIEWS}/${review.id}/close`, {}).expect(409);
  });

  it('a membership already removed by hand before the close counts as revoked, once', async () => {
    const w = await world();
    const review = await open({ group_ids: [w.inner] }, { default_decision: 'revoke' });
    const items = await reviewItems(app.t, root(), review.id);
    expect(items.map((item) => item.kind)).toEqual(['membership']);
    await call()
      .post(`/v1/admin/groups/${w.inner}/members/remove`, { members: [{ user_id: w.u2.user.id }] })
      .expect(200);
    const close = await call().post(`${REVIEWS}/${review.id}/close`, {}).expect(202);
    expect((await waitForJob(app.t, root().auth, close.body.data.job_id)).state).toBe('succeeded');
    expect((await call().get(`${REVIEWS}/${review.id}`).expect(200)).body.data.result).toEqual({
      revoked: 1,
      kept: 0,
      failed: 0,
    });
    // The removal by hand, and none by the close.
    const removals = await sql<{ reason: string | null }>(
      "SELECT reason FROM audit_events WHERE action = 'group.member_remove' AND resource_id = $1",
      [String(w.inner)],
    );
    expect(removals).toEqual([{ reason: null }]);
  });

  it('findings: unused group rights and unused memberships; a use through the group takes both the right and the membership off', async () => {
    const w = await world();
    const findings = async (query: string): Promise<Finding[]> =>
      (await call().get(`/v1/admin/access-findings?page_size=100&${query}`).expect(200)).body.data;
    const shapeOf = (finding: Finding) => [finding.decided_by, finding.user_id, finding.group_id];
    expect((await findings(`group_id=${w.team}`)).map(shapeOf).sort(byShape)).toEqual(
      [
        ['group_authority_permission', null, w.team],
        ['group_permission_grant', null, w.team],
        ['group_membership', w.u1.user.id, w.team],
      ].sort(byShape),
    );
    expect((await findings(`group_id=${w.inner}`)).map(shapeOf)).toEqual([['group_membership', w.u2.user.id, w.inner]]);
    // A role-only group's membership is not a finding (a role's uses are not recorded), nor one that confers nothing.
    expect(await findings(`group_id=${w.roleGroup}`)).toEqual([]);
    expect(await findings(`group_id=${w.empty}`)).toEqual([]);
    const own = await findings(`user_id=${w.u1.user.id}`);
    expect(own).toEqual([
      expect.objectContaining({
        decided_by: 'group_membership',
        group_id: w.team,
        membership_id: w.membership.u1,
        permission_code: null,
        device_id: null,
        last_used_at: null,
      }),
    ]);

    // u1 reads the device's authorities: allowed through T's authority permission.
    await call(w.u1).get(`/v1/admin/authorities/${w.authority}`).expect(200);
    await app.t.app.get(AccessUses).flush();
    expect((await findings(`group_id=${w.team}`)).map(shapeOf)).toEqual([['group_permission_grant', null, w.team]]);
    expect(await findings(`user_id=${w.u1.user.id}`)).toEqual([]);
    // u2 used nothing: its membership in Inner is still a finding, the right it shares is not.
    expect((await findings(`user_id=${w.u2.user.id}`)).map(shapeOf)).toEqual([
      ['group_membership', w.u2.user.id, w.inner],
    ]);
    // On the device: the group's authority permission (now used) is off; the unused memberships it reaches stay.
    expect((await findings(`device_id=${w.device}&unused_for_days=0`)).map(shapeOf).sort(byShape)).toEqual(
      [
        ['group_authority_permission', null, w.team],
        ['group_membership', w.u1.user.id, w.team],
        ['group_membership', w.u2.user.id, w.inner],
      ].sort(byShape),
    );
    const used = await sql<{ kind: string; path_id: string }>(
      "SELECT kind, path_id FROM access_path_uses WHERE (kind = 'a' AND path_id = $1) OR (kind = 'm' AND path_id = ANY($2::bigint[]))",
      [w.ap, [w.membership.u1, w.membership.u2]],
    );
    expect(used.map((row) => `${row.kind}${row.path_id}`).sort()).toEqual([`a${w.ap}`, `m${w.membership.u1}`].sort());
  });

  it('a reviewer reached only through a group’s admin role is told when a campaign opens', async () => {
    const w = await world();
    const viewer = await actor('viewer');
    const admins = await group({ role_id: 2 });
    await add(admins, [{ user_id: viewer.user.id }]);
    const review = await open({ group_ids: [w.team] });
    const told = await sql<{ user_id: string }>(
      "SELECT user_id FROM inbox_messages WHERE type = 'access_review' AND data->>'access_review_id' = $1",
      [String(review.id)],
    );
    expect(told.map((row) => Number(row.user_id))).toContain(viewer.user.id);
  });
});

function soon(): string {
  return new Date(Date.now() + 86_400_000).toISOString();
}
