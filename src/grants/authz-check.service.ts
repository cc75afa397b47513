import { Injectable } from '@nestjs/common';
import { References } from '../database/references.js';
import { AuthContextService } from '../auth/auth-context.service.js';
import { AuthorizationService } from '../auth/authorization.service.js';
import { isPermissionCode, PERMISSIONS } from '../auth/permissions.js';
import { ApiError } from '../common/api-error.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { AuthzCheckQueryDto, AuthzDecisionDto } from './dto/authz-check.dto.js';

/** `GET /authz/check` (part 5): the evaluator's answer for any user, the same code path the guards use. */
@Injectable()
export class AuthzCheckService {
  constructor(
    private readonly contexts: AuthContextService,
    private readonly authorization: AuthorizationService,
    private readonly uow: UnitOfWork,
    private readonly references: References,
  ) {}

  async check(query: AuthzCheckQueryDto): Promise<AuthzDecisionDto> {
    const userId = Number(query.user_id);
    const deviceId = query.device_id === undefined ? undefined : Number(query.device_id);
    if (!isPermissionCode(query.permission)) {
      throw new ApiError('PERMISSION_NOT_FOUND', `Permission ${query.permission} does not exist`, {
        permission: query.permission,
        known: PERMISSIONS.length,
      });
    }
    const subject = await this.contexts.subjectOf(userId);
    if (subject === undefined) throw ApiError.notFound('USER_NOT_FOUND', userId);
    if (deviceId !== undefined) await this.references.device(this.uow.reader, deviceId);
    const decision = await this.authorization.decide(subject, query.permission, deviceId);
    return { user_id: userId, permission: query.permission, device_id: deviceId ?? null, ...decision };
  }
}
