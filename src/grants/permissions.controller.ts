import { ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Controller, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import type { ListResponse } from '../platform/http/responses.js';
import { PermissionDto } from './catalogue.dto.js';
import { CatalogueService, PERMISSION_LIST } from './catalogue.service.js';

/** `/v1/admin/permissions`: the seeded, read-only permission catalogue (part 6.4). */
@ApiTags('permissions and roles')
@Controller('v1/admin/permissions')
export class PermissionsController {
  constructor(private readonly catalogue: CatalogueService) {}

  @ListRoute({
    summary: 'List the permission catalogue',
    returns: PermissionDto,
    spec: PERMISSION_LIST,
  })
  @Authorize({
    permission: 'permission_grants.read',
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<PermissionDto>> {
    return this.catalogue.permissions(query);
  }
}
