import { Body, Controller, Delete, Get, Headers, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IfMatchHeader, type IfMatch } from '../platform/http/etag.js';
import { NoContent, type BareResponse } from '../platform/http/responses.js';
import { listQueryOf, selectionOf } from './scim-query.js';
import { scimDocument, scimResource, wantsMinimal } from './scim-responses.js';
import { ScimRoute } from './scim-route.decorator.js';
import { scimId, ScimUsersService } from './scim-users.service.js';

const PERMISSION = { permission: 'scim.provision' } as const;

/** `/scim/v2/Users` (part 6.19): the identity provider's view of the admin API's users. */
@Controller('scim/v2/Users')
export class ScimUsersController {
  constructor(private readonly users: ScimUsersService) {}

  @Get()
  @ScimRoute({
    summary: 'List users (SCIM)',
    description: 'filter (indexed), startIndex (1-based), count (≤ 100), attributes, excludedAttributes',
    status: 200,
    errors: [400, 401, 403, 429],
  })
  @Authorize(PERMISSION)
  async list(@Query() query: Record<string, unknown>): Promise<BareResponse> {
    return scimDocument(await this.users.list(listQueryOf(query)));
  }

  @Get(':id')
  @ScimRoute({ summary: 'Get a user (SCIM)', status: 200, errors: [400, 401, 403, 404, 429] })
  @Authorize(PERMISSION)
  async get(@Param('id') id: string, @Query() query: Record<string, unknown>): Promise<BareResponse | NoContent> {
    return scimResource(await this.users.get(scimId(id, 'USER_NOT_FOUND'), selectionOf(query)));
  }

  @Post()
  @ScimRoute({
    summary: 'Create a user (SCIM)',
    description: 'Its own role is SCIM_DEFAULT_ROLE_ID; active (default true) activates it.',
    status: 201,
    errors: [400, 401, 403, 409, 429],
    body: 'A SCIM User',
  })
  @Authorize(PERMISSION)
  async create(@Actor() actor: AuthContext, @Body() body: unknown): Promise<BareResponse | NoContent> {
    return scimResource(await this.users.create(actor, body));
  }

  @Put(':id')
  @ScimRoute({
    summary: 'Replace a user (SCIM)',
    description: 'active false suspends the user and revokes every session at once.',
    status: 200,
    errors: [400, 401, 403, 404, 409, 412, 429],
    body: 'A SCIM User',
  })
  @Authorize(PERMISSION)
  async replace(
    @Actor() actor: AuthContext,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch,
  ): Promise<BareResponse | NoContent> {
    return scimResource(await this.users.replace(actor, scimId(id, 'USER_NOT_FOUND'), body, ifMatch));
  }

  @Patch(':id')
  @ScimRoute({
    summary: 'Patch a user (SCIM)',
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
      await this.users.patch(actor, scimId(id, 'USER_NOT_FOUND'), body, ifMatch),
      wantsMinimal(prefer),
    );
  }

  @Delete(':id')
  @ScimRoute({
    summary: 'Delete a user (SCIM)',
    description: 'As DELETE /v1/admin/users/{id}: a soft delete that revokes every session.',
    status: 204,
    errors: [400, 401, 403, 404, 412, 429],
  })
  @Authorize(PERMISSION)
  async remove(
    @Actor() actor: AuthContext,
    @Param('id') id: string,
    @IfMatchHeader() ifMatch: IfMatch,
  ): Promise<NoContent> {
    await this.users.remove(actor, scimId(id, 'USER_NOT_FOUND'), ifMatch);
    return NoContent.instance;
  }
}
