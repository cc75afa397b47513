import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { Body, Controller, Delete, Get, Patch, Post, Query } from '@nestjs/common';
import { DryRun } from '../access-model/dry-run.decorator.js';
import { writeOrPreview, type PreviewAnswer } from '../platform/database/write-or-preview.js';
import { SESSION_LIST } from '../access-model/sessions.repository.js';
import { USER_LIST } from './users.repository.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { ApiTags } from '@nestjs/swagger';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { ApiIncludeDeleted, IncludeDeleted } from '../platform/http/include-deleted.js';
import { IdParam } from '../platform/http/id.pipe.js';
import type { ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { NoOptionsDto } from '../platform/http/validation.js';
import { CreateUserDto, SuspendUserDto, UpdateUserDto } from './dto/user-input.dto.js';
import { RevokeSessionsDto, SessionDto, SessionsRevokedDto } from './dto/session.dto.js';
import { PinResetDto, UserDto } from './dto/user.dto.js';
import { UserActionsService } from './user-actions.service.js';
import { UserSessionsService } from './user-sessions.service.js';
import { UsersService } from './users.service.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';

/** `/v1/admin/users` (part 6.1). */
@ApiTags('users')
@Controller('v1/admin/users')
export class UsersController {
  constructor(
    private readonly users: UsersService,
    private readonly actions: UserActionsService,
    private readonly sessions: UserSessionsService,
  ) {}

  @ListRoute({
    summary: 'List users',
    returns: UserDto,
    spec: USER_LIST,
  })
  @Authorize({
    permission: 'users.read',
  })
  @CachedRead({
    answerStored: true,
  })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<UserDto>> {
    return this.users.list(query);
  }

  @Get(':id')
  @Authorize({
    permission: 'users.read',
  })
  @Describe({
    summary: 'Get a user (cached)',
    returns: UserDto,
    errors: [400, 404],
  })
  @CachedRead({
    prefetch: detailOf('user'),
    answerStored: true,
  })
  @ApiIncludeDeleted()
  get(
    @IdParam() id: number,
    @IncludeDeleted() includeDeleted: boolean,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<UserDto>> {
    return this.users.get(id, includeDeleted, prefetched);
  }

  @Post()
  @Authorize({
    permission: 'users.create',
  })
  @Describe({
    summary: 'Create a user (status pending)',
    returns: UserDto,
    status: 201,
    errors: [400, 404, 409],
  })
  create(@Actor() actor: AuthContext, @Body() dto: CreateUserDto): Promise<ResourceResponse<UserDto>> {
    return this.users.create(actor, dto);
  }

  @Patch(':id')
  @Authorize({
    permission: 'users.update',
  })
  @Describe({
    summary: 'Change a user’s email, display name, phone, role, user name or external id',
    description: 'Changing one’s own role is 422 `SELF_ACTION_FORBIDDEN`.',
    returns: UserDto,
    errors: [400, 404, 409, 412, 422],
    preview: true,
  })
  update(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() dto: UpdateUserDto,
    @DryRun('access.read') dryRun: boolean,
  ): Promise<ResourceResponse<UserDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.users.update(actor, id, dto, ifMatch));
  }

  @Delete(':id')
  @Authorize({
    permission: 'users.delete',
  })
  @Describe({
    summary: 'Soft-delete a user and revoke its sessions (204 if already deleted)',
    returns: UserDto,
    noContent: 'Already deleted (or revoked): nothing changed',
    errors: [400, 404, 412, 422],
    preview: true,
  })
  remove(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @DryRun('access.read') dryRun: boolean,
  ): Promise<ResourceResponse<UserDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.actions.remove(actor, id, ifMatch));
  }

  @Post(':id/restore')
  @Authorize({
    permission: 'users.restore',
  })
  @Describe({
    summary: 'Restore a deleted user (204 if it is not deleted)',
    returns: UserDto,
    noContent: 'Not deleted: nothing changed',
    errors: [400, 404, 412],
  })
  restore(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<UserDto> | NoContent> {
    return this.actions.restore(actor, id, ifMatch);
  }

  @Post(':id/activate')
  @Authorize({
    permission: 'users.activate',
  })
  @Describe({
    summary: 'Activate a pending or suspended user',
    returns: UserDto,
    errors: [400, 404, 409, 412],
  })
  activate(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<UserDto>> {
    return this.actions.activate(actor, id, ifMatch);
  }

  @Post(':id/suspend')
  @Authorize({
    permission: 'users.suspend',
  })
  @Describe({
    summary: 'Suspend a pending or active user and revoke its sessions',
    returns: UserDto,
    errors: [400, 404, 409, 412, 422],
    preview: true,
  })
  suspend(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() dto: SuspendUserDto,
    @DryRun('access.read') dryRun: boolean,
  ): Promise<ResourceResponse<UserDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.actions.suspend(actor, id, dto.reason, ifMatch));
  }

  @Post(':id/reset-pin')
  @Authorize({
    permission: 'users.reset_pin',
  })
  @Describe({
    summary: 'Set a new random 6-digit PIN and return it once',
    description: 'Only a hash is stored; the PIN appears in this response and nowhere else.',
    returns: PinResetDto,
    errors: [400, 404, 409, 412],
  })
  resetPin(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<PinResetDto>> {
    return this.actions.resetPin(actor, id, ifMatch);
  }

  @ListRoute({
    path: ':id/sessions',
    summary: 'List a user’s sessions, newest first (never a token)',
    description: 'A deleted user’s sessions stay readable.',
    returns: SessionDto,
    spec: SESSION_LIST,
    errors: [404],
  })
  @Authorize({
    permission: 'users.read',
  })
  listSessions(@IdParam() id: number, @Query() query: Record<string, unknown>): Promise<ListResponse<SessionDto>> {
    return this.sessions.list(id, query);
  }

  @Post(':id/revoke-sessions')
  @Authorize({
    permission: 'users.revoke_sessions',
  })
  @Describe({
    summary: 'Revoke every live session of a user',
    description:
      'Every instance refuses those sessions on the next request. `If-Match` is checked against the user’s version.',
    returns: SessionsRevokedDto,
    errors: [400, 404, 412, 422],
  })
  revokeSessions(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() dto: RevokeSessionsDto,
  ): Promise<ResourceResponse<SessionsRevokedDto>> {
    return this.sessions.revokeAll(actor, id, dto.reason, ifMatch);
  }
}
