import { Injectable } from '@nestjs/common';
import { AuthorityReferences } from '../authorities/authority-references.repository.js';
import { AuthContextService } from '../access-model/auth-context.service.js';
import { AuthorizationService } from '../access-model/authorization.service.js';
import { decisionOf, denialReason, type AccessPath, type DenialReason } from '../access-model/access-rules.js';
import type { Subject } from '../platform/auth/auth-context.js';
import { isPermissionCode, PERMISSIONS } from '../platform/auth/permissions.js';
import { ApiError } from '../platform/http/api-error.js';
import { UnitOfWork } from '../platform/database/unit-of-work.js';
import { AccessService } from './access.service.js';
import type { AuthzCheckQueryDto, AuthzDecisionDto } from './dto/authz-check.dto.js';

/** `GET /authz/check` (part 5): the evaluator's answer for any user, the same code path the guards use. */
@Injectable()
export class AuthzCheckService {
  constructor(
    private readonly contexts: AuthContextService,
    private readonly authorization: AuthorizationService,
    private readonly uow: UnitOfWork,
    private readonly authorityReferences: AuthorityReferences,
    private readonly access: AccessService,
  ) {}

  async check(query: AuthzCheckQueryDto, actor: Subject): Promise<AuthzDecisionDto> {
    const userId = Number(query.user_id);
    const deviceId = query.device_id === undefined ? undefined : Number(query.device_id);
    if (!isPermissionCode(query.permission)) {
      throw new ApiError('PERMISSION_NOT_FOUND', `Permission ${query.permission} does not exist`, {
        permission: query.permission,
        known: PERMISSIONS.length,
      });
    }
    const answer = { user_id: userId, permission: query.permission, device_id: deviceId ?? null };
    const explain = query.explain === 'true';
    if (query.at !== undefined) {
      // As of a moment: an access question (part 6.13), so `access.read` too; any user that
      // exists (a deleted one included), judged on the facts then.
      await this.authorization.assertAllowed(actor, 'access.read');
      const moment = await this.access.momentAsked(query.at);
      const { decision, paths, denial } = await this.access.decideAt(userId, query.permission, deviceId, moment);
      return { ...answer, ...decision, ...(explain ? explained(paths, denial) : {}) };
    }
    const subject = await this.contexts.subjectOf(userId);
    if (subject === undefined) throw ApiError.notFound('USER_NOT_FOUND', userId);
    if (deviceId !== undefined) await this.authorityReferences.device(this.uow.reader, deviceId);
    if (!explain) return { ...answer, ...(await this.authorization.decide(subject, query.permission, deviceId)) };
    const paths = await this.authorization.explain(subject, query.permission, deviceId);
    return {
      ...answer,
      ...decisionOf(paths),
      ...explained(paths, paths.length === 0 ? denialReason(subject) : undefined),
    };
  }
}

/** What `explain=true` adds: every path, and on a denial (no path) the rule that refused. */
function explained(
  paths: AccessPath[],
  denial: DenialReason | undefined,
): Pick<AuthzDecisionDto, 'paths' | 'denied_because'> {
  return denial === undefined ? { paths } : { paths, denied_because: denial };
}
