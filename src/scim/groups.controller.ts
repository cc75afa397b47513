import { Body, Controller, Delete, Get, Headers, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IfMatchHeader, type IfMatch } from '../platform/http/etag.js';
import { NoContent, type BareResponse } from '../platform/http/responses.js';
import { listQueryOf, selectionOf } from './scim-query.js';
import { scimDocument, scimResource, wantsMinimal } from './scim-responses.js';
import { ScimRoute } from './scim-route.decorator.js';
import { ScimGroupsService } from './scim-groups.service.js';
import { scimId } from './scim-users.service.js';

const PERMISSION = { permission: 'scim.provision' } as const;

/** `/scim/v2/Groups` (part 6.19): the identity provider's view of the admin API's groups and their direct members. */
@Controller('scim/v2/Groups')
export class ScimGroupsController {
  constructor(private readonly groups: ScimGroupsService) {}

  @Get()
  @ScimRoute({
    summary: 'List groups (SCIM)',
    description: 'filter (indexed), startIndex (1-based), count (≤ 100), attributes, excludedAttributes',
    status: 200,
    errors: [400, 401, 403, 429],
  })
  @Authorize(PERMISSION)
  async list(@Query() query: Record<string, unknown>): Promise<BareResponse> {
    return scimDocument(await this.groups.list(listQueryOf(query)));
  }

  @Get(':id')
  @ScimRoute({ summary: 'Get a group (SCIM)', status: 200, errors: [400, 401, 403, 404, 429] })
  @Authorize(PERMISSION)
  async get(@Param('id') id: string, @Query() query: Record<string, unknown>): Promise<BareResponse | NoContent> {
    return scimResource(await this.groups.get(scimId(id, 'GROUP_NOT_FOUND'), selectionOf(query)));
  }

  @Post()
  @ScimRoute({
    summary: 'Create a group (SCIM)',
    description:
      'members (type User, or Group for a nested group) are added as POST /v1/admin/groups/{id}/members would, atomically.',
    status: 201,
    errors: [400, 401, 403, 409, 429],
    body: 'A SCIM Group',
  })
  @Authorize(PERMISSION)
  async create(@Actor() actor: AuthContext, @Body() body: unknown): Promise<BareResponse | NoContent> {
    return scimResource(await this.groups.create(actor, body));
  }

  @Put(':id')
  @ScimRoute({
    summary: 'Replace a group (SCIM)',
    description: 'members replaces the direct members.',
    status: 200,
    errors: [400, 401, 403, 404, 409, 412, 429],
    body: 'A SCIM Group',
  })
  @Authorize(PERMISSION)
  async replace(
    @Actor() actor: AuthContext,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch,
  ): Promise<BareResponse | NoContent> {
    return scimResource(await this.groups.replace(actor, scimId(id, 'GROUP_NOT_FOUND'), body, ifMatch));
  }

  @Patch(':id')
  @ScimRoute({
    summary: 'Patch a group (SCIM)',
    description: 'Atomic: any operation refused refuses them all. Prefer: return=minimal answers 204.',
    status: 200,
    errors: [400, 401, 403, 404, 409, 412, 429],
    body: 'A PatchOp',
  })
  @Authorize(PERMISSION)
  async patch(
    @Actor() actor: AuthContext,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch,
    @Headers('prefer') prefer: string | undefined,
  ): Promise<BareResponse | NoContent> {
    return scimResource(
      await this.groups.patch(actor, scimId(id, 'GROUP_NOT_FOUND'), body, ifMatch),
      wantsMinimal(prefer),
    );
  }

  @Delete(':id')
  @ScimRoute({
    summary: 'Delete a group (SCIM)',
    description: 'As DELETE /v1/admin/groups/{id}: a soft delete; no member holds anything through it.',
    status: 204,
    errors: [400, 401, 403, 404, 412, 429],
  })
  @Authorize(PERMISSION)
  async remove(@Param('id') id: string, @IfMatchHeader() ifMatch: IfMatch): Promise<NoContent> {
    await this.groups.remove(scimId(id, 'GROUP_NOT_FOUND'), ifMatch);
    return NoContent.instance;
  }
}
