/**
 * The permission catalogue (part 5 of the contract). Ids are fixed: the migration that seeds
 * the `permissions` table uses the same ids, and a test checks the two agree.
 */
export const PERMISSIONS = [
  { id: 1, code: 'users.read' },
  { id: 2, code: 'users.create' },
  { id: 3, code: 'users.update' },
  { id: 4, code: 'users.delete' },
  { id: 5, code: 'users.restore' },
  { id: 6, code: 'users.activate' },
  { id: 7, code: 'users.suspend' },
  { id: 8, code: 'users.reset_pin' },
  { id: 9, code: 'devices.read' },
  { id: 10, code: 'devices.create' },
  { id: 11, code: 'devices.update' },
  { id: 12, code: 'devices.transfer_owner' },
  { id: 13, code: 'authorities.read' },
  { id: 14, code: 'authorities.create' },
  { id: 15, code: 'authorities.update' },
  { id: 16, code: 'authorities.delete' },
  { id: 17, code: 'authorities.restore' },
  { id: 18, code: 'authorities.activate' },
  { id: 19, code: 'authorities.deactivate' },
  { id: 20, code: 'authorities.revoke' },
  { id: 21, code: 'authority_permissions.read' },
  { id: 22, code: 'authority_permissions.grant' },
  { id: 23, code: 'authority_permissions.revoke' },
  { id: 24, code: 'permission_grants.read' },
  { id: 25, code: 'permission_grants.grant' },
  { id: 26, code: 'permission_grants.revoke' },
  { id: 27, code: 'inbox.read' },
  { id: 28, code: 'inbox.create' },
  { id: 29, code: 'inbox.update' },
  { id: 30, code: 'inbox.delete' },
  { id: 31, code: 'inbox.restore' },
  { id: 32, code: 'inbox.send_push' },
  { id: 33, code: 'read_state.read' },
  { id: 34, code: 'read_state.update' },
  { id: 35, code: 'mobile_devices.read' },
  { id: 36, code: 'mobile_devices.create' },
  { id: 37, code: 'mobile_devices.deactivate' },
  { id: 38, code: 'mobile_devices.refresh_token' },
  { id: 39, code: 'audit.read' },
  { id: 40, code: 'jobs.read' },
  { id: 41, code: 'users.revoke_sessions' },
  { id: 42, code: 'events.read' },
  { id: 43, code: 'webhooks.read' },
  { id: 44, code: 'webhooks.manage' },
  { id: 45, code: 'access.read' },
  { id: 46, code: 'cache.rebuild' },
  { id: 47, code: 'access_requests.read' },
  { id: 48, code: 'access_requests.create' },
  { id: 49, code: 'access_requests.approve' },
  { id: 50, code: 'access_reviews.read' },
  { id: 51, code: 'access_reviews.manage' },
  { id: 52, code: 'access_reviews.decide' },
  { id: 53, code: 'groups.read' },
  { id: 54, code: 'groups.create' },
  { id: 55, code: 'groups.update' },
  { id: 56, code: 'groups.delete' },
  { id: 57, code: 'groups.restore' },
  { id: 58, code: 'groups.manage_members' },
  { id: 59, code: 'scim.provision' },
] as const;

export type PermissionCode = (typeof PERMISSIONS)[number]['code'];

export const PERMISSION_CODES: readonly PermissionCode[] = PERMISSIONS.map((permission) => permission.code);

const DEVICE_SCOPED_PREFIXES = ['devices.', 'authorities.', 'authority_permissions.'] as const;
/** Judged per device although their resources are not devices: a request's and a review item's device. */
const DEVICE_SCOPED_CODES: readonly string[] = ['access_requests.approve', 'access_reviews.decide'];

/** Device-scoped permissions can also be held through an authority on the device (layer 3c). */
export function isDeviceScoped(code: string): boolean {
  return DEVICE_SCOPED_PREFIXES.some((prefix) => code.startsWith(prefix)) || DEVICE_SCOPED_CODES.includes(code);
}

export function isPermissionCode(code: string): code is PermissionCode {
  return (PERMISSION_CODES as readonly string[]).includes(code);
}

const CODE_BY_ID = new Map<number, string>(PERMISSIONS.map((permission) => [permission.id, permission.code]));
const ID_BY_CODE = new Map<string, number>(PERMISSIONS.map((permission) => [permission.code, permission.id]));

/** The catalogue's code of a permission id (ids are fixed), if any. */
export function permissionCodeOf(id: number): string | undefined {
  return CODE_BY_ID.get(id);
}

/** The catalogue's id of a permission code, if any. */
export function permissionIdOf(code: string): number | undefined {
  return ID_BY_CODE.get(code);
}
