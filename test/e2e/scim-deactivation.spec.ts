import { randomUUID } from 'node:crypto';
import { actor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { caller } from '../support/requests.js';
import { body, fixture, scim } from '../support/scim.js';

/*
 * The failure identity providers' customers fear most: a deactivation accepted while the person's
 * tokens keep working. Two instances share PostgreSQL and Redis; the person's token is warm in
 * both (its auth context cached); after the SCIM answer, its next request on either is refused.
 */
describe('SCIM deactivation locks out at once on every instance (part 6.19)', () => {
  let a: TestApp;
  let b: TestApp;
  let idp: Caller;
  beforeAll(async () => {
    [a, b] = await Promise.all([startApp({ widgets: false }), startApp({ widgets: false })]);
    idp = await actor('super_admin');
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  /** A person the admin API made (no userName: SCIM finds it by its email and adopts it), with a warm token on both instances. */
  async function person(): Promise<{ who: Caller; id: string }> {
    const who = await actor('viewer');
    for (const t of [a, b]) await caller(t, who).get('/v1/admin/users?page_size=1').expect(200);
    const found = await scim(a, idp)
      .get(`/Users?filter=${encodeURIComponent(`userName eq "${who.user.email}"`)}`)
      .expect(200);
    const [resource] = body(found).Resources as { id: string; active: boolean }[];
    expect(resource).toMatchObject({ id: String(who.user.id), active: true });
    return { who, id: String(who.user.id) };
  }

  async function refusedOnBoth(who: Caller): Promise<void> {
    for (const t of [b, a]) {
      const refused = await caller(t, who).get('/v1/admin/users?page_size=1').expect(401);
      expect(refused.body.error.code).toBe('AUTH_SESSION_INVALID');
    }
  }

  it('PATCH active false (Okta)', async () => {
    const { who, id } = await person();
    await scim(a, idp).patch(`/Users/${id}`, fixture('okta-deactivate')).expect(200);
    await refusedOnBoth(who);
  });

  it('PATCH active "False" (Entra ID), sent to the other instance', async () => {
    const { who, id } = await person();
    await scim(b, idp).patch(`/Users/${id}`, fixture('entra-disable-user')).expect(200);
    await refusedOnBoth(who);
  });

  it('PUT with active false', async () => {
    const { who, id } = await person();
    const current = body(await scim(a, idp).get(`/Users/${id}`).expect(200));
    await scim(a, idp)
      .put(`/Users/${id}`, { ...current, active: false, externalId: `ext-${randomUUID()}` })
      .expect(200);
    await refusedOnBoth(who);
  });

  it('DELETE', async () => {
    const { who, id } = await person();
    await scim(b, idp).delete(`/Users/${id}`).expect(204);
    await refusedOnBoth(who);
    await scim(a, idp).get(`/Users/${id}`).expect(404);
  });
});
