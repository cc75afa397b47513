import { PERMISSION_CODES, PERMISSIONS, isDeviceScoped } from '../../src/platform/auth/permissions.js';
import { ROLE, roleById, ROLES } from '../../src/platform/auth/roles.js';
import { assertTransition } from '../../src/users/user-lifecycle.js';

describe('role → permission table (part 5)', () => {
  const permissionsOf = (id: number): string[] => [...(roleById(id)?.permissions ?? [])].sort();

  it('has the 59 permissions of the contract with ids 1..59, the newest in the contract’s order', () => {
    expect(PERMISSIONS.map((permission) => permission.id)).toEqual(Array.from({ length: 59 }, (_, index) => index + 1));
    expect(new Set(PERMISSION_CODES).size).toBe(59);
    expect(PERMISSIONS.slice(40).map((permission) => permission.code)).toEqual([
      'users.revoke_sessions',
      'events.read',
      'webhooks.read',
      'webhooks.manage',
      'access.read',
      'cache.rebuild',
      'access_requests.read',
      'access_requests.create',
      'access_requests.approve',
      'access_reviews.read',
      'access_reviews.manage',
      'access_reviews.decide',
      'groups.read',
      'groups.create',
      'groups.update',
      'groups.delete',
      'groups.restore',
      'groups.manage_members',
      'scim.provision',
    ]);
  });

  it('gives super_admin everything and admin everything but permission grants, webhook management, cache rebuilds and SCIM', () => {
    expect(permissionsOf(ROLE.super_admin)).toEqual([...PERMISSION_CODES].sort());
    expect(PERMISSION_CODES.filter((code) => !roleById(ROLE.admin)?.permissions.has(code))).toEqual([
      'permission_grants.grant',
      'permission_grants.revoke',
      'webhooks.manage',
      'cache.rebuild',
      'scim.provision',
    ]);
  });

  it('gives operator the non-device reads (not audit) plus five writes, asking for access among them', () => {
    expect(permissionsOf(ROLE.operator)).toEqual(
      [
        'users.read',
        'permission_grants.read',
        'inbox.read',
        'read_state.read',
        'mobile_devices.read',
        'jobs.read',
        'access_requests.read',
        'access_reviews.read',
        'groups.read',
        'inbox.create',
        'inbox.send_push',
        'read_state.update',
        'mobile_devices.deactivate',
        'access_requests.create',
      ].sort(),
    );
  });

  it('gives viewer every read except audit.read and events.read, and member nothing and no admin access', () => {
    expect(permissionsOf(ROLE.viewer)).toEqual(
      PERMISSION_CODES.filter(
        (code) => code.endsWith('.read') && code !== 'audit.read' && code !== 'events.read',
      ).sort(),
    );
    expect(permissionsOf(ROLE.member)).toEqual([]);
    expect(ROLES.filter((role) => !role.admin_access).map((role) => role.code)).toEqual(['member']);
  });

  it('treats devices.*, authorities.*, authority_permissions.*, approving requests and deciding reviews as device-scoped', () => {
    expect(PERMISSION_CODES.filter(isDeviceScoped)).toHaveLength(4 + 8 + 3 + 2);
    expect(isDeviceScoped('access_requests.approve')).toBe(true);
    expect(isDeviceScoped('access_reviews.decide')).toBe(true);
    for (const code of ['users.read', 'access_requests.read', 'access_requests.create', 'access_reviews.manage'])
      expect(isDeviceScoped(code)).toBe(false);
  });
});

describe('user lifecycle transitions (part 6.1)', () => {
  const cases: [string, number, 'activate' | 'suspend' | 'reset_pin', boolean][] = [
    ['pending', 1, 'activate', true],
    ['active', 2, 'activate', false],
    ['suspended', 3, 'activate', true],
    ['pending', 1, 'suspend', true],
    ['active', 2, 'suspend', true],
    ['suspended', 3, 'suspend', false],
    ['pending', 1, 'reset_pin', true],
    ['active', 2, 'reset_pin', true],
    ['suspended', 3, 'reset_pin', false],
  ];
  it.each(cases)('%s user, %s: allowed=%s', (from, statusId, action, allowed) => {
    if (allowed) {
      expect(() => assertTransition(statusId, action)).not.toThrow();
    } else {
      expect(() => assertTransition(statusId, action)).toThrow(
        expect.objectContaining({
          code: 'INVALID_STATE_TRANSITION',
          details: { from, action: action === 'reset_pin' ? 'reset-pin' : action },
        }),
      );
    }
  });
});
