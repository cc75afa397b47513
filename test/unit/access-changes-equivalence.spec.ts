import { accessChanges, accessDifference, accessEntries } from '../../src/access-model/access-changes.js';
import type { Subject } from '../../src/platform/auth/auth-context.js';
import type { AuthorityFacts } from '../../src/platform/auth/authority-facts.js';
import { PERMISSIONS } from '../../src/platform/auth/permissions.js';
import { ROLES } from '../../src/platform/auth/roles.js';

const NOW = Date.parse('2030-01-01T12:00:00.000Z');
const CODES = PERMISSIONS.map((p) => p.code);
let seed = 1;
const rand = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const int = (n: number): number => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
const expiry = (): string | null =>
  pick([
    null,
    null,
    new Date(NOW - 1000).toISOString(),
    new Date(NOW).toISOString(),
    new Date(NOW + 1).toISOString(),
    new Date(NOW + 5000).toISOString(),
  ]);

function world(): { subjects: Subject[]; authorities: AuthorityFacts[] } {
  const users = [...new Set(Array.from({ length: 1 + int(6) }, () => int(8)))];
  const subjects: Subject[] = users
    .filter(() => rand() < 0.85)
    .map((user_id) => {
      const groups = [...new Set(Array.from({ length: int(3) }, () => 100 + int(4)))].map((group_id) => ({
        group_id,
        role_id: rand() < 0.3 ? pick(ROLES).id : null,
        via: rand() < 0.5 ? [group_id] : [200 + int(3), group_id],
        expires_at: expiry(),
      }));
      const roleGroup = groups.length > 0 && rand() < 0.3 ? pick(groups).group_id : null;
      return {
        user_id,
        role: pick(ROLES),
        role_group_id: roleGroup,
        groups,
        active: rand() < 0.85,
        grants: Array.from({ length: int(4) }, (_, i) => {
          const g = groups.length > 0 && rand() < 0.4 ? pick(groups) : undefined;
          return {
            id: 1000 + i + int(5),
            code: pick(CODES),
            expires_at: expiry(),
            ...(g ? { group_id: g.group_id, via: g.via } : {}),
          };
        }),
      };
    });
  const authorities: AuthorityFacts[] = [];
  for (let i = 0; i < int(10); i++) {
    const g = rand() < 0.4 ? 100 + int(4) : null;
    authorities.push({
      id: 1 + int(6),
      device_id: int(4),
      user_id: rand() < 0.1 ? null : int(9),
      ...(g === null ? {} : { group_id: g, via: [g] }),
      owner: g === null && rand() < 0.3,
      is_active: rand() < 0.9,
      revoked: rand() < 0.1,
      deleted: rand() < 0.1,
      expires_at: expiry(),
      authority_permissions: Array.from({ length: int(4) }, () => ({ code: pick(CODES), expires_at: expiry() })),
    });
  }
  return { subjects, authorities };
}

/* Found equal by an independent review on 20 000 pairs; the suite keeps 4 000 of them. */
describe('accessChanges (judged user by user) equals accessDifference(accessEntries, accessEntries)', () => {
  it('on 4 000 random pairs of worlds (seeded), both ways', () => {
    let nonEmpty = 0;
    for (let n = 0; n < 4000; n++) {
      seed = n + 1;
      const before = world();
      const after = rand() < 0.2 ? { subjects: [], authorities: [] } : world();
      const only = rand() < 0.3 ? new Set(Array.from({ length: 1 + int(5) }, () => pick(CODES))) : undefined;
      const at = NOW + pick([-1, 0, 1]);
      const expected = accessDifference(
        accessEntries(before.subjects, before.authorities, at, only),
        accessEntries(after.subjects, after.authorities, at, only),
      );
      const got = accessChanges(before, after, at, only);
      nonEmpty += expected.length > 0 ? 1 : 0;
      if (JSON.stringify(got) !== JSON.stringify(expected)) {
        expect({ n, got }).toStrictEqual({ n, got: expected });
      }
      const back = accessChanges(after, before, at, only);
      const expectedBack = accessDifference(
        accessEntries(after.subjects, after.authorities, at, only),
        accessEntries(before.subjects, before.authorities, at, only),
      );
      if (JSON.stringify(back) !== JSON.stringify(expectedBack))
        expect({ n, back }).toStrictEqual({ n, back: expectedBack });
    }

    expect(nonEmpty).toBeGreaterThan(1000);
  });
});
