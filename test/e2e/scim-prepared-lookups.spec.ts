import { DataSource } from 'typeorm';
import { actor, type Caller } from '../support/auth.js';
import { useApp } from '../support/app.js';
import { scim } from '../support/scim.js';

/*
 * An identity provider's lookups are named statements kept on their connection (part 6.19,
 * issue 41). Only `eq` on a key is: a review sent every attribute × operator × value × select list
 * and counted 48 texts left on one connection (about 5 MB of plans) while every compared filter
 * was prepared. One pooled connection, so this spec sees the statements its requests left.
 */
describe('SCIM lookups kept as prepared statements are bounded', () => {
  const app = useApp({ widgets: false, env: { DB_POOL_SIZE: '1' } });
  let idp: Caller;
  beforeAll(async () => {
    idp = await actor('super_admin');
  });

  const kept = async (): Promise<string[]> =>
    (
      await app.t.app
        .get(DataSource)
        .query<{ name: string }[]>("SELECT name FROM pg_prepared_statements WHERE name LIKE 'scim-%' ORDER BY name")
    ).map((row) => row.name);

  it('a userName lookup is one; any other filter, operator or value adds none beyond the keys', async () => {
    await scim(app.t, idp)
      .get(`/Users?filter=${encodeURIComponent('userName eq "nobody@example.com"')}`)
      .expect(200);
    expect((await kept()).length).toBe(1);
    const users = ['id', 'externalId', 'userName', 'displayName', 'active', 'meta.lastModified', 'emails.value'];
    const groups = ['id', 'externalId', 'displayName', 'meta.created', 'members.value'];
    const operators = ['eq', 'co', 'gt'];
    const values = ['"7"', '"2020-01-01T00:00:00Z"'];
    for (const [resource, attributes, selects] of [
      ['Users', users, ['', '&attributes=userName']],
      ['Groups', groups, ['', '&excludedAttributes=members']],
    ] as const)
      for (const attribute of attributes)
        for (const operator of operators)
          for (const value of values)
            for (const select of selects) {
              const filter = encodeURIComponent(`${attribute} ${operator} ${value}`);
              const res = await scim(app.t, idp).get(`/${resource}?count=1&filter=${filter}${select}`);
              expect([200, 400]).toContain(res.status);
            }
    // At most each key (4 of users, 3 of groups) with `eq`, in each select list, and a well-formed
    // and an ill-formed value of it (an id that is no number is no parameter): 28 texts. Every
    // compared filter prepared left 68 here.
    expect((await kept()).length).toBeLessThanOrEqual(7 * 2 * 2);
  }, 120_000);
});
