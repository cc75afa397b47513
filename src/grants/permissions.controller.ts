import { Controller, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { ListRoute } from '../platform/auth/authorize.decorator.js';
import type { ListResponse } from '../platform/http/responses.js';
import { PermissionDto } from './catalogue.dto.js';
import { CatalogueService, PERMISSION_LIST } from './catalogue.service.js';

/** `/v1/admin/permissions`: the seeded, read-only permission catalogue (part 6.4). */
@ApiTags('permissions and roles')
@Controller('v1/admin/permissions')
export class PermissionsController {
  constructor(private readonly catalogue: CatalogueService) {}

  @ListRoute({
    permission: 'permission_grants.read',
    summary: 'List the permission catalogue',
    returns: PermissionDto,
    spec: PERMISSION_LIST,
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<PermissionDto>> {
    return this.catalogue.permissions(query);
  }
}
