import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { DryRun } from '../access-model/dry-run.decorator.js';
import { writeOrPreview, type PreviewAnswer } from '../platform/database/write-or-preview.js';
import { GRANT_LIST } from './permission-grants.repository.js';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { GrantPermissionDto, PermissionGrantDto, RevokePermissionDto } from './dto/permission-grant.dto.js';
import { PermissionGrantsService } from './permission-grants.service.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/permission-grants` (part 6.5). */
@ApiTags('permission grants')
@Controller('v1/admin/permission-grants')
export class PermissionGrantsController {
  constructor(private readonly grants: PermissionGrantsService) {}

  @ListRoute({
    summary: 'List permission grants',
    returns: PermissionGrantDto,
    spec: GRANT_LIST,
  })
  @Authorize({
    permission: 'permission_grants.read',
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<PermissionGrantDto>> {
    return this.grants.list(query);
  }

  @Get(':id')
  @Authorize({
    permission: 'permission_grants.read',
  })
  @Describe({
    summary: 'Get a permission grant (cached)',
    returns: PermissionGrantDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('permission_grant'),
  })
  get(
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<PermissionGrantDto>> {
    return this.grants.get(id, prefetched);
  }

  @Post('grant')
  @Authorize({
    permission: 'permission_grants.grant',
  })
  @Describe({
    summary: 'Grant a user or a group one permission (a new row)',
    description: 'A group’s grant is held by every user the group reaches: the rules of part 5 apply to each of them.',
    returns: PermissionGrantDto,
    status: 201,
    errors: [400, 404, 409, 422],
    preview: true,
  })
  grant(
    @Actor() actor: AuthContext,
    @Body() dto: GrantPermissionDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<PermissionGrantDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.grants.grant(actor, dto));
  }

  @Post('revoke')
  @Authorize({
    permission: 'permission_grants.revoke',
  })
  @Describe({
    summary: 'Revoke the active grant of a user (or a group) and permission',
    returns: PermissionGrantDto,
    errors: [400, 404],
    preview: true,
  })
  revoke(
    @Actor() actor: AuthContext,
    @Body() dto: RevokePermissionDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<PermissionGrantDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.grants.revoke(actor, dto));
  }
}
