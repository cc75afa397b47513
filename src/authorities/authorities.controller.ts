import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Delete, Get, Patch, Post, Query } from '@nestjs/common';
import { DryRun } from '../access-model/dry-run.decorator.js';
import { writeOrPreview, type PreviewAnswer } from '../platform/database/write-or-preview.js';
import { AUTHORITY_LIST } from './authorities.repository.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { ApiIncludeDeleted, IncludeDeleted } from '../platform/http/include-deleted.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { NoOptionsDto } from '../platform/http/validation.js';
import { AuthoritiesService } from './authorities.service.js';
import { AuthorityActionsService } from './authority-actions.service.js';
import { deviceOf } from '../platform/auth/device-locators.js';
import { AUTHORITY } from './device-locators.js';
import { AuthorityDto, CreateAuthorityDto, RevokeAuthorityDto, UpdateAuthorityDto } from './dto/authority.dto.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

const ON_ITS_DEVICE = deviceOf(AUTHORITY);

/** `/v1/admin/authorities` (part 6.3). */
@ApiTags('authorities')
@Controller('v1/admin/authorities')
export class AuthoritiesController {
  constructor(
    private readonly authorities: AuthoritiesService,
    private readonly actions: AuthorityActionsService,
  ) {}

  @ListRoute({
    summary: 'List authorities',
    description: 'Without the global `authorities.read`, only rows of devices where an authority gives it.',
    returns: AuthorityDto,
    spec: AUTHORITY_LIST,
  })
  @Authorize({
    permission: 'authorities.read',
    check: 'service',
  })
  @CachedRead({
    answerStored: true,
  })
  list(@Actor() actor: AuthContext, @Query() query: Record<string, unknown>): Promise<ListResponse<AuthorityDto>> {
    return this.authorities.list(actor, query);
  }

  @Get(':id')
  @Authorize({
    permission: 'authorities.read',
    device: ON_ITS_DEVICE,
  })
  @Describe({
    summary: 'Get an authority (cached)',
    returns: AuthorityDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('authority'),
    answerStored: true,
  })
  @ApiIncludeDeleted()
  get(
    @IdParam() id: number,
    @IncludeDeleted() includeDeleted: boolean,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<AuthorityDto>> {
    return this.authorities.get(id, includeDeleted, prefetched);
  }

  @Post()
  @Authorize({
    permission: 'authorities.create',
    check: 'service',
  })
  @Describe({
    summary: 'Give a user an authority on a device',
    description: 'Checked on the body’s device after validation. An existing pair, deleted or not, is 409 with its id.',
    returns: AuthorityDto,
    status: 201,
    errors: [400, 404, 409, 422],
  })
  create(@Actor() actor: AuthContext, @Body() dto: CreateAuthorityDto): Promise<ResourceResponse<AuthorityDto>> {
    return this.authorities.create(actor, dto);
  }

  @Patch(':id')
  @Authorize({
    permission: 'authorities.update',
    device: ON_ITS_DEVICE,
  })
  @Describe({
    summary: 'Change an authority’s expiry or label',
    returns: AuthorityDto,
    errors: [400, 404, 412, 422],
  })
  update(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() dto: UpdateAuthorityDto,
  ): Promise<ResourceResponse<AuthorityDto>> {
    return this.authorities.update(actor, id, dto, ifMatch);
  }

  @Delete(':id')
  @Authorize({
    permission: 'authorities.delete',
    device: ON_ITS_DEVICE,
  })
  @Describe({
    summary: 'Soft-delete an authority (not the owner’s; 204 if already deleted)',
    returns: AuthorityDto,
    noContent: 'Already deleted (or revoked): nothing changed',
    errors: [400, 404, 412, 422],
    preview: true,
  })
  remove(
    @Write() { id, ifMatch }: RecordWrite,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<AuthorityDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.actions.remove(id, ifMatch));
  }

  @Post(':id/restore')
  @Authorize({
    permission: 'authorities.restore',
    device: ON_ITS_DEVICE,
  })
  @Describe({
    summary: 'Restore a deleted authority (204 if it is not deleted)',
    returns: AuthorityDto,
    noContent: 'Not deleted: nothing changed',
    errors: [400, 404, 412],
  })
  restore(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<AuthorityDto> | NoContent> {
    return this.actions.restore(id, ifMatch);
  }

  @Post(':id/activate')
  @Authorize({
    permission: 'authorities.activate',
    device: ON_ITS_DEVICE,
  })
  @Describe({
    summary: 'Activate an inactive authority (a revoked one is 409)',
    returns: AuthorityDto,
    errors: [400, 404, 409, 412],
  })
  activate(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<AuthorityDto>> {
    return this.actions.activate(id, ifMatch);
  }

  @Post(':id/deactivate')
  @Authorize({
    permission: 'authorities.deactivate',
    device: ON_ITS_DEVICE,
  })
  @Describe({
    summary: 'Deactivate an active authority (not the owner’s)',
    returns: AuthorityDto,
    errors: [400, 404, 409, 412, 422],
    preview: true,
  })
  deactivate(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<AuthorityDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.actions.deactivate(id, ifMatch));
  }

  @Post(':id/revoke')
  @Authorize({
    permission: 'authorities.revoke',
    device: ON_ITS_DEVICE,
  })
  @Describe({
    summary: 'Revoke an authority for good (not the owner’s)',
    returns: AuthorityDto,
    errors: [400, 404, 409, 412, 422],
    preview: true,
  })
  revoke(
    @Write() { id, ifMatch }: RecordWrite,
    @Body() dto: RevokeAuthorityDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<AuthorityDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.actions.revoke(id, dto.reason, ifMatch));
  }
}
