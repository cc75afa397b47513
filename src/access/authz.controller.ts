import { Describe } from '../platform/http/openapi/describe.decorator.js';
import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { AuthzCheckService } from './authz-check.service.js';
import { AuthzCheckQueryDto, AuthzDecisionDto } from './dto/authz-check.dto.js';

/** `GET /v1/admin/authz/check` (part 5). */
@ApiTags('permission grants')
@Controller('v1/admin/authz')
export class AuthzController {
  constructor(private readonly authz: AuthzCheckService) {}

  @Get('check')
  @Authorize({
    permission: 'permission_grants.read',
  })
  @Describe({
    summary: 'Would this user be allowed this permission (on this device)?',
    description:
      'Answers with the same evaluator the guards use, and says which layer decided. `explain=true` adds every way it is allowed (on a denial, `denied_because`); ' +
      '`at` answers as of that moment from the access history (a user pending, suspended or deleted then is allowed nothing); a question about the past needs `access.read` as well.',
    returns: AuthzDecisionDto,
    errors: [400, 404, 422],
  })
  check(@Query() query: AuthzCheckQueryDto, @Actor() actor: AuthContext): Promise<AuthzDecisionDto> {
    return this.authz.check(query, actor);
  }
}
