import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Authorize } from '../auth/authorize.decorator.js';
import { ApiEnvelope } from '../common/openapi/api-envelope.decorator.js';
import type { ListResponse } from '../common/responses.js';
import { PermissionDto, RoleDto } from './catalogue.dto.js';
import { CatalogueService } from './catalogue.service.js';

/** The seeded, read-only permission catalogue and roles (part 6.4). */
@ApiTags('permissions and roles')
@Controller('v1/admin')
export class CatalogueController {
  constructor(private readonly catalogue: CatalogueService) {}

  @Get('permissions')
  @Authorize({ permission: 'permission_grants.read', summary: 'List the permission catalogue' })
  @ApiEnvelope(PermissionDto, { list: true, errors: [400] })
  permissions(@Query() query: Record<string, unknown>): Promise<ListResponse<PermissionDto>> {
    return this.catalogue.permissions(query);
  }

  @Get('roles')
  @Authorize({ permission: 'permission_grants.read', summary: 'List the roles with the permissions each grants' })
  @ApiEnvelope(RoleDto, { list: true, errors: [400] })
  roles(@Query() query: Record<string, unknown>): Promise<ListResponse<RoleDto>> {
    return this.catalogue.roles(query);
  }
}
