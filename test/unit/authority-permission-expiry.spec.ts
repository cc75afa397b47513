import {
  accessPaths,
  authorityPaths,
  decisionOf,
  earlierExpiry,
  heldPermission,
} from '../../src/access-model/access-rules.js';
import type { Subject } from '../../src/platform/auth/auth-context.js';
import type { AuthorityFacts } from '../../src/platform/auth/authority-facts.js';
import { roleById, ROLE } from '../../src/platform/auth/roles.js';
import { authorityFacts } from '../support/access-facts.js';

const EXPIRY = '2030-01-01T12:00:00.000Z';
const INSTANT = Date.parse(EXPIRY);

function authority(overrides: Partial<AuthorityFacts> = {}): AuthorityFacts {
  return authorityFacts({ authority_permissions: [{ code: 'authorities.revoke', expires_at: EXPIRY }], ...overrides });
}

const operator = (): Subject => {
  const role = roleById(ROLE.operator);
  if (role === undefined) throw new Error('no operator role');
  return { user_id: 11, role, active: true, grants: [] };
};

describe('an authority permission with expires_at (part 6.15): judged at the moment asked', () => {
  it('allows until the instant, and nothing from the instant on', () => {
    expect(authorityPaths(authority(), 'authorities.revoke', INSTANT - 1)).toHaveLength(1);
    expect(authorityPaths(authority(), 'authorities.revoke', INSTANT)).toEqual([]);
    expect(authorityPaths(authority(), 'authorities.revoke', INSTANT + 60_000)).toEqual([]);
    expect(decisionOf(accessPaths(operator(), [authority()], 'authorities.revoke', INSTANT)).allowed).toBe(false);
    expect(decisionOf(accessPaths(operator(), [authority()], 'authorities.revoke', INSTANT - 1))).toMatchObject({
      allowed: true,
      decided_by: 'authority_permission',
      authority_id: 7,
    });
  });

  it('an expired permission takes nothing else with it: ownership and other permissions still allow', () => {
    const facts = authority({
      owner: true,
      authority_permissions: [
        { code: 'authorities.revoke', expires_at: EXPIRY },
        { code: 'devices.read', expires_at: null },
      ],
    });
    expect(authorityPaths(facts, 'authorities.revoke', INSTANT).map((path) => path.decided_by)).toEqual([
      'device_owner',
    ]);
    expect(authorityPaths(facts, 'devices.read', INSTANT + 1).map((path) => path.decided_by)).toEqual([
      'device_owner',
      'authority_permission',
    ]);
  });

  it('a later unexpired row of the same pair holds it when an expired one is still listed', () => {
    const facts = authority({
      authority_permissions: [
        { code: 'authorities.revoke', expires_at: EXPIRY },
        { code: 'authorities.revoke', expires_at: null },
      ],
    });
    expect(heldPermission(facts, 'authorities.revoke', INSTANT)).toEqual({
      code: 'authorities.revoke',
      expires_at: null,
    });
  });

  it('the path ends at the earlier of the authority’s and the permission’s expiry', () => {
    const later = '2030-06-01T00:00:00.000Z';
    const sooner = '2029-06-01T00:00:00.000Z';
    expect(authorityPaths(authority({ expires_at: later }), 'authorities.revoke', 0)[0]?.expires_at).toBe(EXPIRY);
    expect(authorityPaths(authority({ expires_at: sooner }), 'authorities.revoke', 0)[0]?.expires_at).toBe(sooner);
    expect(authorityPaths(authority({ expires_at: later, owner: true }), 'authorities.revoke', 0)).toEqual([
      { decided_by: 'device_owner', authority_id: 7, grant_id: null, group_id: null, via: [], expires_at: later },
      {
        decided_by: 'authority_permission',
        authority_id: 7,
        grant_id: null,
        group_id: null,
        via: [],
        expires_at: EXPIRY,
      },
    ]);
    expect(earlierExpiry(null, null)).toBeNull();
    expect(earlierExpiry(null, EXPIRY)).toBe(EXPIRY);
    expect(earlierExpiry(EXPIRY, null)).toBe(EXPIRY);
  });
});
