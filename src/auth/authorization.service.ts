import { Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { Subject } from './auth-context.js';
import { AUTHORITY_FACTS_SELECT, authorityDecision, type AuthorityFacts } from './authority-facts.js';
import { DeviceAuthoritiesService } from './device-authorities.service.js';
import { isDeviceScoped, type PermissionCode } from './permissions.js';

export type DecidedBy = 'role' | 'permission_grant' | 'device_owner' | 'authority_permission';

/** The answer of the evaluator; `/authz/check` returns it as is. */
export interface Decision {
  readonly allowed: boolean;
  readonly decided_by: DecidedBy | null;
  readonly authority_id: number | null;
  readonly grant_id: number | null;
}

export const DENIED: Decision = { allowed: false, decided_by: null, authority_id: null, grant_id: null };
const BY_ROLE: Decision = { allowed: true, decided_by: 'role', authority_id: null, grant_id: null };

export function permissionDenied(permission: string, deviceId?: number): ApiError {
  return new ApiError('PERMISSION_DENIED', `Missing the permission ${permission}`, { permission, ...(deviceId === undefined ? {} : { device_id: deviceId }) });
}

/**
 * The authorization evaluator of part 5, the one code path behind the guard, list row
 * filtering, bulk per-item checks and `/authz/check`: admin access (layer 2), then the role's
 * permissions (3a), an effective permission grant (3b), and for device-scoped permissions an
 * effective authority on the device that is the owner or holds the permission (3c).
 */
@Injectable()
export class AuthorizationService {
  constructor(
    private readonly devices: DeviceAuthoritiesService,
    private readonly uow: UnitOfWork,
  ) {}

  hasAdminAccess(subject: Pick<Subject, 'role'>): boolean {
    return subject.role.admin_access;
  }

  /** Layers 2, 3a and 3b: what the subject may do everywhere. */
  decideGlobally(subject: Subject, permission: PermissionCode, now = Date.now()): Decision {
    if (!subject.role.admin_access) return DENIED;
    if (subject.role.permissions.has(permission)) return BY_ROLE;
    const grant = subject.grants.find((candidate) => candidate.code === permission && (candidate.expires_at === null || Date.parse(candidate.expires_at) > now));
    return grant === undefined ? DENIED : { allowed: true, decided_by: 'permission_grant', authority_id: null, grant_id: grant.id };
  }

  async decide(subject: Subject, permission: PermissionCode, deviceId?: number): Promise<Decision> {
    const now = Date.now();
    const global = this.decideGlobally(subject, permission, now);
    if (global.allowed || deviceId === undefined || !isDeviceScoped(permission) || !subject.role.admin_access) return global;
    const authority = (await this.devices.forDevice(deviceId)).find((candidate) => candidate.user_id === subject.user_id);
    return (authority === undefined ? undefined : authorityDecision(authority, permission, now)) ?? DENIED;
  }

  async assertAllowed(subject: Subject, permission: PermissionCode, deviceId?: number): Promise<void> {
    if (!(await this.decide(subject, permission, deviceId)).allowed) throw permissionDenied(permission, deviceId);
  }

  /**
   * The devices on which the subject holds the permission: `all` through layers 3a/3b,
   * otherwise those where layer 3c allows it (optionally only among `among`). Serves list row
   * filtering and bulk per-item checks with one query.
   */
  async devicesAllowed(subject: Subject, permission: PermissionCode, among?: readonly number[]): Promise<'all' | Set<number>> {
    const now = Date.now();
    if (this.decideGlobally(subject, permission, now).allowed) return 'all';
    if (!subject.role.admin_access || !isDeviceScoped(permission)) return new Set();
    const filter = among === undefined ? '' : 'AND a.device_id = ANY($2::bigint[])';
    const rows = await this.uow.reader.query<AuthorityFacts[]>(
      `SELECT ${AUTHORITY_FACTS_SELECT} FROM authorities a
       WHERE a.user_id = $1 AND NOT a.is_deleted AND a.revoked_at IS NULL AND a.is_active ${filter}`,
      among === undefined ? [subject.user_id] : [subject.user_id, [...among]],
    );
    return new Set(rows.filter((row) => authorityDecision(row, permission, now) !== undefined).map((row) => row.device_id));
  }
}
