import { userGroupChains, usersGroupChains } from '../../src/access-model/group-facts.repository.js';
import { sqlOn } from '../support/db.js';
import { createOwnDatabase } from '../support/own-database.js';

/*
 * A user's chains through groups are read two ways: one user at a time (its auth context, the
 * effective role in lists) walking up from its own memberships, and many users at once (the access
 * snapshots of a change reaching 100 000 members) walking up once per group they are in. Both must
 * answer the same rows, the chain kept for each group included (the one lasting longest, then the
 * shortest, then the lowest). Random worlds of nested groups on a database of the spec's own:
 * cycles and chains deeper than the limit written straight into the tables (the API refuses them,
 * the walks must still end), deleted groups, removed, expiring and expired memberships.
 */
describe('chains through groups: one user at a time and many at once agree', () => {
  let own: { url: string; drop: () => Promise<void> };
  const sql = <T>(text: string, params: unknown[] = []): Promise<T[]> => sqlOn<T>(own.url, text, params);
  beforeAll(async () => {
    own = await createOwnDatabase('group_chains');
  }, 120_000);
  afterAll(async () => own?.drop());

  /** A world of 40 groups and 300 users; answers the users' ids. */
  async function world(seed: number): Promise<number[]> {
    await sql('SELECT setseed($1)', [seed / 100]);
    await sql('TRUNCATE group_memberships, groups RESTART IDENTITY CASCADE');
    const users = await sql<{ id: string }>(
      `INSERT INTO users (email, display_name, role_id, status_id)
       SELECT 'chains-' || $1 || '-' || i || '@example.com', 'Chains', 4, 2 FROM generate_series(1, 300) i RETURNING id`,
      [seed],
    );
    await sql(
      `INSERT INTO groups (name, role_id, is_deleted)
       SELECT 'chains ' || i, CASE WHEN random() < 0.3 THEN 2 + floor(random() * 3)::int END, random() < 0.1
       FROM generate_series(1, 40) i`,
    );
    const membership = `CASE WHEN random() < 0.3 THEN now() + (random() * 20 - 10) * interval '1 day' END,
      CASE WHEN random() < 0.1 THEN now() END, now() - interval '30 days'`;
    await sql(
      `INSERT INTO group_memberships (group_id, member_group_id, expires_at, removed_at, added_at)
       SELECT a, b, ${membership} FROM (
         SELECT 1 + floor(random() * 40)::int AS a, 1 + floor(random() * 40)::int AS b FROM generate_series(1, 90)) pairs
       WHERE a <> b ON CONFLICT DO NOTHING`,
    );
    await sql(
      `INSERT INTO group_memberships (group_id, user_id, expires_at, removed_at, added_at)
       SELECT 1 + floor(random() * 40)::int, u.id, ${membership}
       FROM users u, generate_series(1, 3) WHERE u.email LIKE 'chains-' || $1 || '-%' ON CONFLICT DO NOTHING`,
      [seed],
    );
    return users.map((row) => Number(row.id));
  }

  it.each([1, 2, 3, 4, 5])('world %i: every user’s chains, live now and as snapshots read them', async (seed) => {
    const users = await world(seed);
    for (const liveNow of [true, false]) {
      const many = await sql<{ user_id: string; group_id: string; role_id: number | null; via: string[] }>(
        `SELECT user_id, group_id, role_id, via, expires_at FROM (${usersGroupChains('$1::bigint[]', liveNow)}) c
         ORDER BY user_id, group_id`,
        [users],
      );
      const one = await sql<{ user_id: string; group_id: string; role_id: number | null; via: string[] }>(
        `SELECT u.id AS user_id, c.group_id, c.role_id, c.via, c.expires_at
         FROM unnest($1::bigint[]) AS u(id), LATERAL (${userGroupChains('u.id', liveNow)}) c
         ORDER BY u.id, c.group_id`,
        [users],
      );
      // Nested chains are there to compare (not a world of direct memberships only).
      expect(many.filter((row) => row.via.length > 2).length).toBeGreaterThan(0);
      expect(many).toEqual(one);
    }
  });
});
