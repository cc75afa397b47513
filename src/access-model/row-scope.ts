import type { Scope } from '../platform/http/list/list-sql.js';
import type { Subject } from '../platform/auth/auth-context.js';
import type { AuthorizationService } from './authorization.service.js';
import type { PermissionCode } from '../platform/auth/permissions.js';

/**
 * List row filtering for device-scoped resources (part 5): an actor without the global read
 * permission sees only the rows of devices where an authority gives it that permission.
 * `deviceColumn` is the SQL expression of the row's device id (trusted).
 */
export async function deviceRowScope(
  authorization: AuthorizationService,
  subject: Subject,
  permission: PermissionCode,
  deviceColumn: string,
): Promise<Scope | undefined> {
  const devices = await authorization.devicesAllowed(subject, permission, undefined, true);
  if (devices === 'all') return undefined;
  return { where: `${deviceColumn} = ANY($1::bigint[])`, params: [[...devices]] };
}
