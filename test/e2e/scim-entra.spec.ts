import { randomUUID } from 'node:crypto';
import { actor, createUser, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { body, fixture, scim } from '../support/scim.js';

const q = (filter: string): string => encodeURIComponent(filter);

/*
 * Microsoft Entra ID's provisioning traffic as it really is (its payloads as fixtures,
 * test/fixtures/scim/entra-*.json): lookups on userName, emails[type eq "work"].value and
 * externalId, groups by displayName without members, PATCH with "Replace", "False", dotted keys
 * without path and member removal by a value array.
 */
describe('SCIM: Microsoft Entra ID’s forms (part 6.19)', () => {
  const app = useApp({ widgets: false });
  let entra: Caller;
  const userName = `ana.${randomUUID().slice(0, 8)}@contoso.com`;
  const externalId = randomUUID();
  let id = '';
  beforeAll(async () => {
    entra = await actor('super_admin');
  });

  it('creates a user with the enterprise extension, ignoring the attributes the service does not keep', async () => {
    const response = await scim(app.t, entra)
      .post('/Users', fixture('entra-create-user', { userName, externalId }))
      .expect(201);
    const user = body(response);
    id = user.id as string;
    expect(user).toMatchObject({
      schemas: [
        'urn:ietf:params:scim:schemas:core:2.0:User',
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
      ],
      externalId,
      userName,
      displayName: 'Ana Entra',
      name: { formatted: 'Ana Entra', givenName: 'Ana', familyName: 'Entra' },
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { employeeNumber: '701984', department: 'Field' },
    });
    expect(user).not.toHaveProperty('title');
    expect(user).not.toHaveProperty('addresses');
  });

  it('finds the user by userName, by emails[type eq "work"].value and by externalId', async () => {
    for (const filter of [
      `userName eq "${userName.toUpperCase()}"`,
      `emails[type eq "work"].value eq "${userName}"`,
      `externalId eq "${externalId}"`,
      `emails.value eq "${userName}" and active eq true`,
    ]) {
      const response = await scim(app.t, entra)
        .get(`/Users?filter=${q(filter)}`)
        .expect(200);
      expect([filter, body(response)]).toEqual([
        filter,
        expect.objectContaining({ totalResults: 1, Resources: [expect.objectContaining({ id })] }),
      ]);
    }
    const none = await scim(app.t, entra)
      .get(`/Users?filter=${q(`externalId eq "${externalId.toUpperCase()}"`)}`)
      .expect(200);
    expect(body(none)).toMatchObject({ totalResults: 0 }); // externalId is case-exact
  });

  it('PATCH with "Replace", a replace without path of dotted keys, a filtered email path, the extension by URN; unknown paths ignored', async () => {
    const newEmail = `ana.e.${randomUUID().slice(0, 8)}@contoso.com`;
    const response = await scim(app.t, entra)
      .patch(`/Users/${id}`, fixture('entra-patch-user', { newEmail }))
      .expect(200);
    expect(body(response)).toMatchObject({
      displayName: 'Ana E. Entra',
      name: { givenName: 'Anabela', familyName: 'Entra', formatted: 'Ana Entra' },
      emails: [{ value: newEmail, type: 'work', primary: true }],
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': {
        department: 'Operations',
        employeeNumber: '701984',
      },
    });
    const [row] = await sql<{ email: string; display_name: string }>(
      'SELECT email, display_name FROM users WHERE id = $1',
      [id],
    );
    expect(row).toEqual({ email: newEmail, display_name: 'Ana E. Entra' });
    const [event] = await sql<{ changes: Record<string, unknown> }>(
      "SELECT changes FROM audit_events WHERE resource_id = $1 AND action = 'user.update' ORDER BY id DESC LIMIT 1",
      [id],
    );
    expect(Object.keys(event?.changes ?? {}).sort()).toEqual(['display_name', 'email', 'scim_profile']);
  });

  it('disables with "False" (a string): suspended, sessions revoked', async () => {
    await sql("INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour')", [id]);
    const response = await scim(app.t, entra).patch(`/Users/${id}`, fixture('entra-disable-user')).expect(200);
    expect(body(response)).toMatchObject({ active: false });
    const [row] = await sql<{ status_id: number; live: number }>(
      `SELECT status_id, (SELECT count(*)::int FROM auth_sessions s WHERE s.user_id = users.id AND s.revoked_at IS NULL) AS live FROM users WHERE id = $1`,
      [id],
    );
    expect(row).toEqual({ status_id: 3, live: 0 });
    // "True" brings it back.
    const back = await scim(app.t, entra)
      .patch(`/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'Replace', path: 'active', value: 'True' }],
      })
      .expect(200);
    expect(body(back)).toMatchObject({ active: true });
  });

  describe('groups', () => {
    const displayName = `Contoso Field ${randomUUID().slice(0, 8)}`;
    let groupId = '';
    let member: { id: number };
    beforeAll(async () => {
      member = await createUser({ role: 'member' });
    });

    it('creates a group, finds it by displayName with excludedAttributes=members', async () => {
      const created = await scim(app.t, entra)
        .post('/Groups', fixture('entra-create-group', { displayName, externalId: randomUUID() }))
        .expect(201);
      groupId = body(created).id as string;
      expect(body(created)).toMatchObject({ displayName, members: [], meta: { resourceType: 'Group' } });
      const found = await scim(app.t, entra)
        .get(`/Groups?excludedAttributes=members&filter=${q(`displayName eq "${displayName.toLowerCase()}"`)}`)
        .expect(200);
      const list = body(found);
      expect(list).toMatchObject({ totalResults: 1, Resources: [{ id: groupId, displayName }] });
      expect((list.Resources as Record<string, unknown>[])[0]).not.toHaveProperty('members');
    });

    it('adds a member ("Add"), adds it again (no error), finds the group by members.value, removes it by a value array', async () => {
      await scim(app.t, entra)
        .patch(`/Groups/${groupId}`, fixture('entra-add-member', { member: member.id }))
        .expect(200);
      const again = await scim(app.t, entra)
        .patch(`/Groups/${groupId}`, fixture('entra-add-member', { member: member.id }))
        .expect(200);
      expect(body(again)).toMatchObject({ members: [{ value: String(member.id), type: 'User' }] });
      const live = await sql<{ count: number }>(
        'SELECT count(*)::int AS count FROM group_memberships WHERE group_id = $1 AND user_id = $2 AND removed_at IS NULL',
        [groupId, member.id],
      );
      expect(live[0]?.count).toBe(1);
      const byMember = await scim(app.t, entra)
        .get(`/Groups?filter=${q(`members.value eq "${member.id}"`)}`)
        .expect(200);
      expect(body(byMember)).toMatchObject({ totalResults: 1, Resources: [{ id: groupId }] });
      const user = await scim(app.t, entra).get(`/Users/${member.id}`).expect(200);
      expect(body(user)).toMatchObject({ groups: [{ value: groupId, display: displayName }] });
      await scim(app.t, entra)
        .patch(`/Groups/${groupId}`, fixture('entra-remove-member', { member: member.id }))
        .expect(200);
      const after = await scim(app.t, entra).get(`/Groups/${groupId}`).expect(200);
      expect(body(after)).toMatchObject({ members: [] });
      const events = await sql<{ action: string }>(
        "SELECT action FROM audit_events WHERE resource_type = 'group' AND resource_id = $1 ORDER BY id",
        [groupId],
      );
      expect(events.map((event) => event.action)).toEqual(['group.create', 'group.member_add', 'group.member_remove']);
    });

    it('renames the group', async () => {
      const renamed = `${displayName} renamed`;
      const response = await scim(app.t, entra)
        .patch(`/Groups/${groupId}`, fixture('entra-rename-group', { displayName: renamed }))
        .expect(200);
      expect(body(response)).toMatchObject({ displayName: renamed });
    });
  });
});
