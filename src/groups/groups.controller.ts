import { Body, Controller, Delete, Get, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { DryRun } from '../access-model/dry-run.decorator.js';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { Write, type RecordWrite } from '../platform/auth/record-write.decorator.js';
import { detailOf } from '../platform/cache/cache-keys.js';
import { writeOrPreview, type PreviewAnswer } from '../platform/database/write-or-preview.js';
import { IdParam } from '../platform/http/id.pipe.js';
import { ApiIncludeDeleted, IncludeDeleted } from '../platform/http/include-deleted.js';
import { Describe, ListRoute } from '../platform/http/openapi/describe.decorator.js';
import { ListMetaDto } from '../platform/http/openapi/envelope.dto.js';
import type { ListResponse, NoContent, ResourceResponse } from '../platform/http/responses.js';
import { NoOptionsDto } from '../platform/http/validation.js';
import { CachedRead } from '../platform/projections/cached-read.decorator.js';
import { PrefetchedEntries, type Prefetched } from '../platform/projections/prefetched.js';
import {
  AddMembersDto,
  CreateGroupDto,
  GroupDto,
  MembershipDto,
  MembersQueryDto,
  MembersResponseDto,
  RemoveMembersDto,
  UpdateGroupDto,
} from './dto/group.dto.js';
import { GroupMemberListsService } from './group-member-lists.service.js';
import { GroupMembersService } from './group-members.service.js';
import { GROUP_LIST } from './groups.repository.js';
import { GroupsService } from './groups.service.js';

/** `/v1/admin/groups` (part 6.18). */
@ApiTags('groups')
@Controller('v1/admin/groups')
export class GroupsController {
  constructor(
    private readonly groups: GroupsService,
    private readonly members: GroupMembersService,
    private readonly lists: GroupMemberListsService,
  ) {}

  @ListRoute({
    summary: 'List groups',
    returns: GroupDto,
    spec: GROUP_LIST,
  })
  @Authorize({ permission: 'groups.read' })
  @CachedRead({ answerStored: true })
  list(@Query() query: Record<string, unknown>): Promise<ListResponse<GroupDto>> {
    return this.groups.list(query);
  }

  @Get(':id')
  @Authorize({ permission: 'groups.read' })
  @Describe({ summary: 'Get a group (cached)', returns: GroupDto, errors: [400, 404] })
  @CachedRead({ prefetch: detailOf('group'), answerStored: true })
  @ApiIncludeDeleted()
  get(
    @IdParam() id: number,
    @IncludeDeleted() includeDeleted: boolean,
    @PrefetchedEntries() prefetched: Prefetched | undefined,
  ): Promise<ResourceResponse<GroupDto>> {
    return this.groups.get(id, includeDeleted, prefetched);
  }

  @Post()
  @Authorize({ permission: 'groups.create' })
  @Describe({
    summary: 'Create a group',
    description: 'A `role_id` is conferred on every future member: only an actor who outranks it may give it.',
    returns: GroupDto,
    status: 201,
    errors: [400, 404, 409],
  })
  create(@Actor() actor: AuthContext, @Body() dto: CreateGroupDto): Promise<ResourceResponse<GroupDto>> {
    return this.groups.create(actor, dto);
  }

  @Patch(':id')
  @Authorize({ permission: 'groups.update' })
  @Describe({
    summary: 'Change a group’s name, description, role or external id',
    description:
      'A new role is handed to every user the group reaches: the self, rank and delegation rules of part 5 apply to each.',
    returns: GroupDto,
    errors: [400, 404, 409, 412, 422],
    preview: true,
  })
  update(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() dto: UpdateGroupDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<GroupDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.groups.update(actor, id, dto, ifMatch));
  }

  @Delete(':id')
  @Authorize({ permission: 'groups.delete' })
  @Describe({
    summary: 'Soft-delete a group (204 if already deleted)',
    description: 'From that instant no member holds anything through it and it stops nesting; restore brings all back.',
    returns: GroupDto,
    noContent: 'Already deleted: nothing changed',
    errors: [400, 404, 412],
    preview: true,
  })
  remove(
    @Write() { id, ifMatch }: RecordWrite,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<GroupDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.groups.remove(id, ifMatch));
  }

  @Post(':id/restore')
  @Authorize({ permission: 'groups.restore' })
  @Describe({
    summary: 'Restore a deleted group (204 if it is not deleted)',
    description: 'Its memberships and rights return, judged as handing them again to every user it reaches.',
    returns: GroupDto,
    noContent: 'Not deleted: nothing changed',
    errors: [400, 404, 412, 422],
  })
  restore(
    @Write() { actor, id, ifMatch }: RecordWrite,
    @Body() _options: NoOptionsDto,
  ): Promise<ResourceResponse<GroupDto> | NoContent> {
    return this.groups.restore(actor, id, ifMatch);
  }

  @Get(':id/members')
  @Authorize({ permission: 'groups.read' })
  @Describe({
    summary: 'The group’s direct memberships, or (`transitive=true`) every user it reaches',
    description:
      'Direct: the membership rows (filters `member_type`, `is_active`; sort `id`, `added_at`). Transitive: one row per user ' +
      'who belongs directly or through nested groups, `{user_id, via, expires_at}`, by `user_id`.',
    returns: MembershipDto,
    listMeta: ListMetaDto,
    errors: [400, 404],
  })
  memberList(@IdParam() id: number, @Query() query: MembersQueryDto): Promise<ListResponse<unknown>> {
    return this.lists.members(id, query);
  }

  @Post(':id/members')
  @Authorize({ permission: 'groups.manage_members' })
  @Describe({
    summary: 'Add users and groups to the group (1–1000 items)',
    description:
      'Each item is judged alone (`added`, `already_member`, `failed`): adding hands the group’s role and rights to every ' +
      'user the member reaches (self, rank and delegation rules of part 5); a group that would contain itself or nest more ' +
      'than 5 levels fails with `GROUP_NESTING_INVALID`.',
    returns: MembersResponseDto,
    errors: [400, 404, 422],
    preview: true,
  })
  addMembers(
    @Actor() actor: AuthContext,
    @IdParam() id: number,
    @Body() dto: AddMembersDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<MembersResponseDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.members.add(actor, id, dto));
  }

  @Post(':id/members/remove')
  @Authorize({ permission: 'groups.manage_members' })
  @Describe({
    summary: 'Remove users and groups from the group (1–1000 items)',
    description: 'Per item `removed`, `not_member` or `failed`. Removing is not limited by the rules of part 5.',
    returns: MembersResponseDto,
    errors: [400, 404],
    preview: true,
  })
  removeMembers(
    @Actor() actor: AuthContext,
    @IdParam() id: number,
    @Body() dto: RemoveMembersDto,
    @DryRun() dryRun: boolean,
  ): Promise<ResourceResponse<MembersResponseDto> | ResourceResponse<PreviewAnswer> | NoContent> {
    return writeOrPreview(dryRun, () => this.members.remove(actor, id, dto));
  }
}
