import type { Subject } from '../../src/platform/auth/auth-context.js';
import type { AuthorityFacts } from '../../src/platform/auth/authority-facts.js';
import { roleById, ROLE, type RoleCode } from '../../src/platform/auth/roles.js';

/** The facts of one authority for the pure rules: user 11's live authority 7 on device 3, as overridden. */
export function authorityFacts(overrides: Partial<AuthorityFacts> = {}): AuthorityFacts {
  return {
    id: 7,
    device_id: 3,
    user_id: 11,
    owner: false,
    is_active: true,
    revoked: false,
    deleted: false,
    expires_at: null,
    authority_permissions: [],
    ...overrides,
  };
}

/** User 11, active, with the role's permissions and no grants, as overridden. */
export function subjectOf(code: RoleCode, overrides: Partial<Subject> = {}): Subject {
  const role = roleById(ROLE[code]);
  if (role === undefined) throw new Error(`no role ${code}`);
  return { user_id: 11, role, active: true, grants: [], ...overrides };
}
