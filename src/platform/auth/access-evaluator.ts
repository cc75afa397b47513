import { ApiError } from '../http/api-error.js';
import type { Prefetched } from '../projections/prefetched.js';
import type { AuthContext, Subject } from './auth-context.js';
import type { Decision } from './decision.js';
import type { PermissionCode } from './permissions.js';

/**
 * What the platform's guard asks of the access model (`src/access-model/`), which provides it the
 * way features register device locators: the platform knows no table of users, sessions, grants or
 * authorities, only these questions. The access model answers them from its cached projections.
 */
export abstract class AccessEvaluator {
  /**
   * Layer 1 after the token: the session and its user as one auth context, with `extra` cache keys
   * (the route's detail projection) fetched in the same round trip; throws 401 `AUTH_SESSION_INVALID`.
   */
  abstract resolveWith(
    userId: number,
    sessionId: string,
    extra: readonly string[],
  ): Promise<{ readonly context: AuthContext; readonly prefetched: Prefetched | undefined }>;

  /** As `resolveWith` without extra keys (a job acting on a user's authority). */
  abstract resolve(userId: number, sessionId: string): Promise<AuthContext>;

  /** Layer 2: may the subject's role call the admin API at all? */
  abstract hasAdminAccess(subject: Pick<Subject, 'role'>): boolean;

  /** Layers 3a and 3b, with no use noted: what the subject may do everywhere. */
  abstract decideGlobally(subject: Subject, permission: PermissionCode): Decision;

  /** A request's own permission everywhere (layers 2, 3a, 3b); an allowing path's use is noted. */
  abstract admitGlobally(subject: Subject, permission: PermissionCode): Decision;

  /** A request's own permission on its device (layer 3c) after `admitGlobally` refused: 403, or the use noted. */
  abstract admitOnDevice(subject: Subject, permission: PermissionCode, deviceId: number): Promise<void>;

  /**
   * Layer 3c from what the auth context carries alone, with no round trip: true (and the use
   * noted) when one of the subject's carried authorities allows the permission on the device;
   * false when it cannot tell, and the caller asks `admitOnDevice`.
   */
  abstract admitFromContext(subject: Subject, permission: PermissionCode, deviceId: number): boolean;
}

/** 403 `PERMISSION_DENIED` for `permission` (on `deviceId`, when device-scoped). */
export function permissionDenied(permission: string, deviceId?: number): ApiError {
  return new ApiError('PERMISSION_DENIED', `Missing the permission ${permission}`, {
    permission,
    ...(deviceId === undefined ? {} : { device_id: deviceId }),
  });
}
