import { Body, Delete, Get, Headers, Inject, Param, Patch, Post, Put, Query, type Type } from '@nestjs/common';
import { Actor } from '../platform/auth/actor.decorator.js';
import type { AuthContext } from '../platform/auth/auth-context.js';
import { Authorize } from '../platform/auth/authorize.decorator.js';
import { IfMatchHeader, type IfMatch } from '../platform/http/etag.js';
import { NoContent, type BareResponse } from '../platform/http/responses.js';
import type { Doc } from './scim-patch.js';
import { listQueryOf, selectionOf, type ListQuery, type Selection } from './scim-query.js';
import { scimDocument, scimResource, wantsMinimal } from './scim-responses.js';
import { ScimRoute } from './scim-route.decorator.js';
import { scimId, type ScimAnswer } from './scim-users.service.js';

/** What a SCIM resource type's service does (Users, Groups). */
export interface ScimResources {
  list(query: ListQuery): Promise<Doc>;
  get(id: number, selection: Selection): Promise<ScimAnswer>;
  create(actor: AuthContext, body: unknown): Promise<ScimAnswer>;
  replace(actor: AuthContext, id: number, body: unknown, ifMatch: IfMatch): Promise<ScimAnswer>;
  patch(actor: AuthContext, id: number, body: unknown, ifMatch: IfMatch): Promise<ScimAnswer>;
  remove(actor: AuthContext, id: number, ifMatch: IfMatch): Promise<void>;
}

export interface ScimResourceType {
  /** `user`, `group`: in the operations' summaries. */
  readonly noun: string;
  readonly notFound: 'USER_NOT_FOUND' | 'GROUP_NOT_FOUND';
  readonly service: Type<ScimResources>;
  /** What creating, replacing and deleting one does beyond the protocol (the operations' descriptions). */
  readonly create: string;
  readonly replace: string;
  readonly remove: string;
}

const PERMISSION = { permission: 'scim.provision' } as const;

/**
 * The six routes of a SCIM resource type (RFC 7644 §3), the same for Users and Groups: each
 * controller file is `@Controller('scim/v2/<Type>') class … extends scimResourceRoutes({…})`.
 */
export function scimResourceRoutes(type: ScimResourceType): Type<object> {
  const { noun, notFound } = type;
  class ScimResourceRoutes {
    constructor(@Inject(type.service) readonly resources: ScimResources) {}

    @Get()
    @ScimRoute({
      summary: `List ${noun}s (SCIM)`,
      description: 'filter (indexed), startIndex (1-based), count (≤ 100), attributes, excludedAttributes',
      status: 200,
      errors: [400, 401, 403, 429],
    })
    @Authorize(PERMISSION)
    async list(@Query() query: Record<string, unknown>): Promise<BareResponse> {
      return scimDocument(await this.resources.list(listQueryOf(query)));
    }

    @Get(':id')
    @ScimRoute({ summary: `Get a ${noun} (SCIM)`, status: 200, errors: [400, 401, 403, 404, 429] })
    @Authorize(PERMISSION)
    async get(@Param('id') id: string, @Query() query: Record<string, unknown>): Promise<BareResponse | NoContent> {
      return scimResource(await this.resources.get(scimId(id, notFound), selectionOf(query)));
    }

    @Post()
    @ScimRoute({
      summary: `Create a ${noun} (SCIM)`,
      description: type.create,
      status: 201,
      errors: [400, 401, 403, 409, 429],
      body: `A SCIM ${noun}`,
    })
    @Authorize(PERMISSION)
    async create(@Actor() actor: AuthContext, @Body() body: unknown): Promise<BareResponse | NoContent> {
      return scimResource(await this.resources.create(actor, body));
    }

    @Put(':id')
    @ScimRoute({
      summary: `Replace a ${noun} (SCIM)`,
      description: type.replace,
      status: 200,
      errors: [400, 401, 403, 404, 409, 412, 429],
      body: `A SCIM ${noun}`,
    })
    @Authorize(PERMISSION)
    async replace(
      @Actor() actor: AuthContext,
      @Param('id') id: string,
      @Body() body: unknown,
      @IfMatchHeader() ifMatch: IfMatch,
    ): Promise<BareResponse | NoContent> {
      return scimResource(await this.resources.replace(actor, scimId(id, notFound), body, ifMatch));
    }

    @Patch(':id')
    @ScimRoute({
      summary: `Patch a ${noun} (SCIM)`,
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
      const answer = await this.resources.patch(actor, scimId(id, notFound), body, ifMatch);
      return scimResource(answer, wantsMinimal(prefer));
    }

    @Delete(':id')
    @ScimRoute({
      summary: `Delete a ${noun} (SCIM)`,
      description: type.remove,
      status: 204,
      errors: [400, 401, 403, 404, 412, 429],
    })
    @Authorize(PERMISSION)
    async remove(
      @Actor() actor: AuthContext,
      @Param('id') id: string,
      @IfMatchHeader() ifMatch: IfMatch,
    ): Promise<NoContent> {
      await this.resources.remove(actor, scimId(id, notFound), ifMatch);
      return NoContent.instance;
    }
  }
  return ScimResourceRoutes;
}
