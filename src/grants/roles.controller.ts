import { ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Controller, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import type { ListResponse } from '../platform/http/responses.js';
import { RoleDto } from './catalogue.dto.js';
import { CatalogueService, ROLE_LIST } from './catalogue.service.js';

/** `/v1/admin/roles`: the seeded roles with the permissions each grants (part 6.4). */
@ApiTags('permissions and roles')
@Controller('v1/admin/roles')
export class RolesController {
  constructor(private readonly catalogue: CatalogueService) {}

  @ListRoute({
    summary: 'List the roles with the permissions each grants',
    returns: RoleDto,
    spec: ROLE_LIST,
  })
  @Authorize({
    permission: 'permission_grants.read',
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<RoleDto>> {
    return this.catalogue.roles(query);
  }
}
