import { Injectable } from '@nestjs/common';
import type { PermissionCode } from './permissions.js';
import type { RoleDefinition } from './roles.js';

export type DecidedBy = 'role' | 'permission_grant' | 'device_owner' | 'authority_permission';

/** The answer of the evaluator; `/authz/check` returns it as is. */
export interface Decision {
  readonly allowed: boolean;
  readonly decided_by: DecidedBy | null;
  readonly authority_id: number | null;
  readonly grant_id: number | null;
}

export interface Subject {
  readonly user_id: number;
  readonly role: RoleDefinition;
}

const DENIED: Decision = { allowed: false, decided_by: null, authority_id: null, grant_id: null };
const BY_ROLE: Decision = { allowed: true, decided_by: 'role', authority_id: null, grant_id: null };

/**
 * The authorization evaluator of part 5, the one code path behind the guard, list row
 * filtering, bulk per-item checks and `/authz/check`. Layer 2 (admin access) and the role
 * permissions are here; the permission-grant (3b) and device-authority (3c) layers plug in
 * after the role check.
 */
@Injectable()
export class AuthorizationService {
  hasAdminAccess(subject: Subject): boolean {
    return subject.role.admin_access;
  }

  decide(subject: Subject, permission: PermissionCode, _deviceId?: number): Promise<Decision> {
    if (!subject.role.admin_access) return Promise.resolve(DENIED);
    if (subject.role.permissions.has(permission)) return Promise.resolve(BY_ROLE);
    return Promise.resolve(DENIED);
  }
}
