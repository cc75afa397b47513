import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Delete, Get, Post, Query } from '@nestjs/common';
import { DryRun } from '../access-model/dry-run.decorator.js';
import { writeOrPreview, type PreviewAnswer } from '../platform/database/write-or-preview.js';
import { AUTHORITY_PERMISSION_LIST } from './authority-permissions.repository.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { AcceptedResponse, ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { BulkJobs } from '../platform/jobs/bulk-jobs.service.js';
import { BulkJobRoute, PrefersAsync } from '../platform/jobs/bulk-job-route.decorator.js';
import type { AcceptedJobDto } from '../platform/jobs/jobs.dto.js';
import { AuthorityPermissionsService } from './authority-permissions.service.js';
import { BulkAuthorityPermissionsService } from './bulk-authority-permissions.service.js';
import { deviceOf } from '../platform/auth/device-locators.js';
import { AUTHORITY_PERMISSION } from './device-locators.js';
import {
  AuthorityPermissionDto,
  BulkAuthorityPermissionsDto,
  BulkResponseDto,
  CreateAuthorityPermissionDto,
} from './dto/authority-permission.dto.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/authority-permissions` (part 6.6). */
@ApiTags('authority permissions')
@Controller('v1/admin/authority-permissions')
export class AuthorityPermissionsController {
  constructor(
    private readonly permissions: AuthorityPermissionsService,
    private readonly bulk: BulkAuthorityPermissionsService,
    private readonly jobs: BulkJobs,
  ) {}

  @ListRoute({
    summary: 'List authority permissions',
    description: 'Without the global read, only rows of devices where an authority gives it.',
    returns: AuthorityPermissionDto,
    spec: AUTHORITY_PERMISSION_LIST,
  })
  @Authorize({
    permission: 'authority_permissions.read',
    check: 'service',
  })
  @CachedRead({
    answerStored: true,
  })
  list(
    @Actor() actor: AuthContext,
    @Query() query: Record<string, unknown>,
  ): Promise<ListResponse<AuthorityPermissionDto>> {
    return this.permissions.list(actor, query);
  }

  @Get(':id')
  @Authorize({
    permission: 'authority_permissions.read',
    device: deviceOf(AUTHORITY_PERMISSION),
  })
  @Describe({
    summary: 'Get an authority permission (cached)',
    returns: AuthorityPermissionDto,
    errors: [400, 404],
  })
  @CachedRead({
    // Not sent as stored: `is_active` is judged at read time (a cached row may have expired since).
    prefetch: detailOf('authority_permission'),
  })
  get(
    @IdParam() id: number,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<AuthorityPermissionDto>> {
    return this.permissions.get(id, prefetched);
  }

  @Post()
  @Authorize({
    permission: 'authority_permissions.grant',
    check: 'service',
  })
  @Describe({
    summary: 'Attach a device-scoped permission to an authority',
    returns: AuthorityPermissionDto,
    status: 201,
    errors: [400, 404, 409, 422],
    preview: true,
  })
  create(
    @Actor() actor: AuthContext,
    @Body() dto: CreateAuthorityPermissionDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<AuthorityPermissionDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.permissions.create(actor, dto));
  }

  @Delete(':id')
  @Authorize({
    permission: 'authority_permissions.revoke',
    device: deviceOf(AUTHORITY_PERMISSION),
  })
  @Describe({
    summary: 'Revoke an authority permission (204 if already revoked)',
    returns: AuthorityPermissionDto,
    noContent: 'Already deleted (or revoked): nothing changed',
    errors: [400, 404, 412],
    preview: true,
  })
  revoke(
    @Write() { id, ifMatch }: RecordWrite,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<AuthorityPermissionDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.permissions.revoke(id, ifMatch));
  }

  @Post('bulk-grant')
  @Authorize({
    permission: 'authority_permissions.grant',
    check: 'service',
  })
  @Describe({
    summary: 'Grant up to 1000 authority permissions (100 000 as a job); per-item results in order',
    description:
      'Each item is checked on its own device; a forbidden or invalid item fails alone. `dry_run` writes nothing.',
    returns: BulkResponseDto,
    errors: [400],
  })
  @BulkJobRoute()
  bulkGrant(
    @Actor() actor: AuthContext,
    @Body() dto: BulkAuthorityPermissionsDto,
    @PrefersAsync() async: boolean,
  ): Promise<BulkResponseDto | AcceptedResponse<AcceptedJobDto>> {
    return this.jobs.answer('authority_permissions.grant', actor, dto, async, () => this.bulk.run(actor, 'grant', dto));
  }

  @Post('bulk-revoke')
  @Authorize({
    permission: 'authority_permissions.revoke',
    check: 'service',
  })
  @Describe({
    summary: 'Revoke up to 1000 authority permissions (100 000 as a job); per-item results in order',
    description:
      'Each item is checked on its own device; a forbidden or invalid item fails alone. `dry_run` writes nothing.',
    returns: BulkResponseDto,
    errors: [400],
  })
  @BulkJobRoute()
  bulkRevoke(
    @Actor() actor: AuthContext,
    @Body() dto: BulkAuthorityPermissionsDto,
    @PrefersAsync() async: boolean,
  ): Promise<BulkResponseDto | AcceptedResponse<AcceptedJobDto>> {
    return this.jobs.answer('authority_permissions.revoke', actor, dto, async, () =>
      this.bulk.run(actor, 'revoke', dto),
    );
  }
}
