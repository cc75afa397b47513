import { PERMISSION_CODES, isDeviceScoped, type PermissionCode } from './permissions.js';

/**
 * Roles and what each may do: the one place the role → permission table lives (part 5).
 * Ids are fixed and seeded by a migration; a test checks the database agrees.
 */
export const ROLE = { super_admin: 1, admin: 2, operator: 3, viewer: 4, member: 5 } as const;
export type RoleCode = keyof typeof ROLE;

export const USER_STATUS = { pending: 1, active: 2, suspended: 3 } as const;
export type UserStatusCode = keyof typeof USER_STATUS;

const READS = PERMISSION_CODES.filter((code) => code.endsWith('.read'));

const ROLE_PERMISSIONS: Readonly<Record<RoleCode, readonly PermissionCode[]>> = {
  super_admin: PERMISSION_CODES,
  admin: PERMISSION_CODES.filter(
    (code) =>
      ![
        'permission_grants.grant',
        'permission_grants.revoke',
        'webhooks.manage',
        'cache.rebuild',
        'scim.provision',
      ].includes(code),
  ),
  // Everything on devices comes from the operator's authorities (layer 3c), never from the role.
  operator: [
    ...READS.filter(
      (code) => !['audit.read', 'events.read', 'webhooks.read', 'access.read'].includes(code) && !isDeviceScoped(code),
    ),
    'inbox.create',
    'inbox.send_push',
    'read_state.update',
    'mobile_devices.deactivate',
    'access_requests.create',
  ],
  viewer: READS.filter((code) => code !== 'audit.read' && code !== 'events.read'),
  member: [],
};

export interface RoleDefinition {
  readonly id: number;
  readonly code: RoleCode;
  /** Whether the role may call the admin API at all (layer 2). */
  readonly admin_access: boolean;
  readonly permissions: ReadonlySet<PermissionCode>;
}

export const ROLES: readonly RoleDefinition[] = (Object.keys(ROLE) as RoleCode[]).map((code) => ({
  id: ROLE[code],
  code,
  admin_access: code !== 'member',
  permissions: new Set(ROLE_PERMISSIONS[code]),
}));

const BY_ID = new Map(ROLES.map((role) => [role.id, role]));

export function roleById(id: number): RoleDefinition | undefined {
  return BY_ID.get(id);
}

export function statusCode(statusId: number): UserStatusCode | undefined {
  return (Object.keys(USER_STATUS) as UserStatusCode[]).find((code) => USER_STATUS[code] === statusId);
}
