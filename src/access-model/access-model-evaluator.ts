import { Injectable } from '@nestjs/common';
import { AccessEvaluator } from '../platform/auth/access-evaluator.js';
import type { AuthContext, Subject } from '../platform/auth/auth-context.js';
import type { Decision } from '../platform/auth/decision.js';
import type { PermissionCode } from '../platform/auth/permissions.js';
import type { Prefetched } from '../platform/projections/prefetched.js';
import { AuthContextService } from './auth-context.service.js';
import { AuthorizationService } from './authorization.service.js';

/** The access model's answers to the platform guard's questions (`AccessEvaluator`). */
@Injectable()
export class AccessModelEvaluator extends AccessEvaluator {
  constructor(
    private readonly contexts: AuthContextService,
    private readonly authorization: AuthorizationService,
  ) {
    super();
  }

  resolveWith(
    userId: number,
    sessionId: string,
    extra: readonly string[],
  ): Promise<{ context: AuthContext; prefetched: Prefetched | undefined }> {
    return this.contexts.resolveWith(userId, sessionId, extra);
  }

  resolve(userId: number, sessionId: string): Promise<AuthContext> {
    return this.contexts.resolve(userId, sessionId);
  }

  hasAdminAccess(subject: Pick<Subject, 'role'>): boolean {
    return this.authorization.hasAdminAccess(subject);
  }

  decideGlobally(subject: Subject, permission: PermissionCode): Decision {
    return this.authorization.decideGlobally(subject, permission);
  }

  admitGlobally(subject: Subject, permission: PermissionCode): Decision {
    return this.authorization.admitGlobally(subject, permission);
  }

  admitOnDevice(subject: Subject, permission: PermissionCode, deviceId: number): Promise<void> {
    return this.authorization.admitOnDevice(subject, permission, deviceId);
  }

  admitFromContext(subject: Subject, permission: PermissionCode, deviceId: number): boolean {
    return this.authorization.admitFromContext(subject, permission, deviceId);
  }
}
