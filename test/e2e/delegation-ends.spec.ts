import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { createGroup } from '../support/groups.js';
import { accessWorld, askFor } from '../support/access-requests.js';
import { caller } from '../support/requests.js';

/** A timestamp as PostgreSQL stores it (microseconds), for comparing rows with a moment set in SQL. */
const at = (value: string | Date | null): string | null => (value === null ? null : new Date(value).toISOString());

/*
 * Issue 42 item 1 (red team, Medium): an operator approved `authority_permissions.grant` on a device
 * for 300 s handed the same right to a second account (a row with `expires_at: null`), which handed
 * it back after the approval ended, for ever. Contract v1.3 part 5: what is handed on lasts no
 * longer than the delegator's own way to it (grant, authority, authority permission, group
 * membership); the new row's `expires_at` is capped at that instant, in single, bulk and preview
 * writes.
 */
describe('a just-in-time right handed on ends with it (part 5, issue 42 item 1)', () => {
  const app = useApp({ widgets: false });
  let operator: Caller;
  let second: Caller;
  let device: number;
  let secondAuthority: number;
  let jitEnds: string;

  beforeAll(async () => {
    operator = await actor('operator');
    second = await actor('operator');
    device = (await createDevice()).id;
    // The operator's just-in-time right, as an access-request approval leaves it. Its end lies past
    // the suite's run, so that no expiry announcer of another spec has it to announce.
    const own = await createAuthority(device, operator.user.id);
    const [row] = await sql<{ expires_at: string }>(
      `INSERT INTO authority_permissions (authority_id, permission_id, expires_at)
       VALUES ($1, $2, now() + interval '1 day') RETURNING expires_at`,
      [own, permissionId('authority_permissions.grant')],
    );
    jitEnds = at(row?.expires_at ?? null) ?? '';
    secondAuthority = await createAuthority(device, second.user.id);
  });

  it('the laundering loop: the handed-on row ends when the right it came from ends; handing it back cannot outlive it', async () => {
    const handed = await caller(app.t, operator)
      .post('/v1/admin/authority-permissions', {
        authority_id: secondAuthority,
        permission_id: permissionId('authority_permissions.grant'),
      })
      .expect(201);
    expect(at(handed.body.data.expires_at)).toBe(jitEnds);
    // The second account hands it on again to a third authority: still the same end.
    const third = await createUser({ role: 'operator' });
    const thirdAuthority = await createAuthority(device, third.id);
    const back = await caller(app.t, second)
      .post('/v1/admin/authority-permissions', {
        authority_id: thirdAuthority,
        permission_id: permissionId('authority_permissions.grant'),
      })
      .expect(201);
    expect(at(back.body.data.expires_at)).toBe(jitEnds);
    const rows = await sql<{ authority_id: string; expires_at: string | null }>(
      `SELECT authority_id, expires_at FROM authority_permissions
        WHERE authority_id = ANY($1::bigint[]) AND revoked_at IS NULL ORDER BY id`,
      [[secondAuthority, thirdAuthority]],
    );
    expect(rows.map((row) => at(row.expires_at))).toEqual([jitEnds, jitEnds]);
  });

  it('in bulk too; and a preview of the single write runs the same capped write and keeps nothing', async () => {
    const fourth = await createUser({ role: 'operator' });
    const fourthAuthority = await createAuthority(device, fourth.id);
    const item = { authority_id: fourthAuthority, permission_id: permissionId('authority_permissions.grant') };
    const preview = await caller(app.t, operator)
      .post('/v1/admin/authority-permissions?dry_run=true', item)
      .expect(200);
    expect(preview.body.data).toMatchObject({ dry_run: true });
    expect(await sql('SELECT id FROM authority_permissions WHERE authority_id = $1', [fourthAuthority])).toEqual([]);
    const granted = await caller(app.t, operator)
      .post('/v1/admin/authority-permissions/bulk-grant', { items: [item] })
      .expect(200);
    expect(granted.body.data.results[0].status).toBe('granted');
    const [row] = await sql<{ expires_at: string | null }>(
      'SELECT expires_at FROM authority_permissions WHERE authority_id = $1 AND revoked_at IS NULL',
      [fourthAuthority],
    );
    expect(at(row?.expires_at ?? null)).toBe(jitEnds);
  });

  it('an approver with a just-in-time right approves no longer than it holds that right', async () => {
    const world = await accessWorld();
    // A third operator who may approve on the device, and holds authorities.read there for a day only
    // (the request asks for 30 days).
    const approver = await actor('operator');
    const held = await createAuthority(world.device, approver.user.id, { permissions: ['access_requests.approve'] });
    const [jit] = await sql<{ expires_at: string }>(
      `INSERT INTO authority_permissions (authority_id, permission_id, expires_at)
       VALUES ($1, $2, now() + interval '1 day') RETURNING expires_at`,
      [held, permissionId('authorities.read')],
    );
    const asked = await caller(app.t, world.operator)
      .post('/v1/admin/access-requests', askFor(world, 'authorities.read', { duration_seconds: 2_592_000 }))
      .expect(201);
    const approved = await caller(app.t, approver)
      .post(`/v1/admin/access-requests/${asked.body.data.id}/approve`, {})
      .expect(200);
    expect(at(approved.body.data.access_expires_at)).toBe(at(jit?.expires_at ?? null));
    const [row] = await sql<{ expires_at: string }>('SELECT expires_at FROM authority_permissions WHERE id = $1', [
      approved.body.data.authority_permission_id,
    ]);
    expect(at(row?.expires_at ?? null)).toBe(at(jit?.expires_at ?? null));
  });

  describe('through a group membership that ends', () => {
    let member: Caller;
    let membershipEnds: string;
    let conferring: number;
    beforeAll(async () => {
      // An operator who may manage members and hand on grants for good, but holds users.suspend
      // only through a group it belongs to until a moment.
      member = await actor('operator');
      for (const code of ['groups.manage_members', 'permission_grants.grant'])
        await sql('INSERT INTO permission_grants (user_id, permission_id) VALUES ($1, $2)', [
          member.user.id,
          permissionId(code),
        ]);
      const source = await createGroup(app.t, app.root, {});
      await sql('INSERT INTO permission_grants (group_id, permission_id) VALUES ($1, $2)', [
        source,
        permissionId('users.suspend'),
      ]);
      const [membership] = await sql<{ expires_at: string }>(
        `INSERT INTO group_memberships (group_id, user_id, expires_at) VALUES ($1, $2, now() + interval '2 days') RETURNING expires_at`,
        [source, member.user.id],
      );
      membershipEnds = at(membership?.expires_at ?? null) ?? '';
      conferring = await createGroup(app.t, app.root, {});
      await sql('INSERT INTO permission_grants (group_id, permission_id) VALUES ($1, $2)', [
        conferring,
        permissionId('users.suspend'),
      ]);
    });

    it('a membership it gives in a group conferring that right ends with its own', async () => {
      const newcomer = await createUser({ role: 'viewer' });
      const added = await caller(app.t, member)
        .post(`/v1/admin/groups/${conferring}/members`, { members: [{ user_id: newcomer.id }] })
        .expect(200);
      expect(added.body.data.results[0].status).toBe('added');
      const [row] = await sql<{ expires_at: string | null }>(
        'SELECT expires_at FROM group_memberships WHERE group_id = $1 AND user_id = $2 AND removed_at IS NULL',
        [conferring, newcomer.id],
      );
      expect(at(row?.expires_at ?? null)).toBe(membershipEnds);
    });

    it('a grant it gives ends with its own way too, or earlier when asked', async () => {
      const newcomer = await createUser({ role: 'viewer' });
      const granted = await caller(app.t, member)
        .post('/v1/admin/permission-grants/grant', {
          user_id: newcomer.id,
          permission_id: permissionId('users.suspend'),
        })
        .expect(201);
      expect(at(granted.body.data.expires_at)).toBe(membershipEnds);
      const other = await createUser({ role: 'viewer' });
      const sooner = new Date(Date.now() + 3_600_000).toISOString();
      const asked = await caller(app.t, member)
        .post('/v1/admin/permission-grants/grant', {
          user_id: other.id,
          permission_id: permissionId('users.suspend'),
          expires_at: sooner,
        })
        .expect(201);
      expect(at(asked.body.data.expires_at)).toBe(at(sooner));
    });

    it('a right held for good (a role) is handed on for good', async () => {
      const newcomer = await createUser({ role: 'viewer' });
      const granted = await caller(app.t, app.root)
        .post('/v1/admin/permission-grants/grant', {
          user_id: newcomer.id,
          permission_id: permissionId('users.suspend'),
        })
        .expect(201);
      expect(granted.body.data.expires_at).toBeNull();
    });
  });
});
