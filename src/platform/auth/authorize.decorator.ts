import { applyDecorators, Get, SetMetadata, type Type } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiBearerAuth, ApiExtension, ApiOperation } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiEnvelope, ApiErrorResponses, type EnvelopeOptions } from '../http/openapi/api-envelope.decorator.js';
import type { ListSpec } from '../http/list/list-spec.js';
import { ApiList, listSummary } from '../http/openapi/api-list.decorator.js';
import type { DeviceOf } from './device-locators.js';
import type { PermissionCode } from './permissions.js';

export interface AuthorizeOptions extends Omit<EnvelopeOptions, 'list'> {
  readonly permission: PermissionCode;
  /** One line for the OpenAPI operation. */
  readonly summary: string;
  readonly description?: string;
  /** The device a device-scoped route acts on (layer 3c): `deviceOf(record, param)`. */
  readonly device?: DeviceOf;
  /**
   * `service`: the guard checks layers 1 and 2 only and the service applies layer 3 where it
   * knows the device(s): list row filtering, bulk per-item checks, a device named in the body
   * (checked after validation and the 404 of the device).
   */
  readonly check?: 'route' | 'service';
  /** The model in the success envelope (`data`, or each item of a list). */
  readonly returns: Type;
  /**
   * The cache key the handler reads (its detail projection), from the raw path: fetched with the
   * auth context in one round trip instead of a second one (a cached detail read costs one).
   */
  readonly prefetch?: (request: FastifyRequest) => string | undefined;
  /**
   * The handler sends the prefetched detail as stored (`ResourceTable.detail`): a plain hit is
   * answered before the handler, by the authentication hook (`storedDetail`).
   */
  readonly detailAsStored?: boolean;
  /**
   * A list route whose handler reads its pages through `ListPages` with no row scope for an actor
   * allowed everywhere: a cached page is answered before the handler (`storedPage`).
   */
  readonly pageAsStored?: boolean;
  /** A list route: the spec that parses its query, from which its parameters are documented. */
  readonly list?: ListSpec;
}

export const AUTHORIZE = 'admin-api:authorize';
/** The route config key under which `@Authorize` hands its rule to Fastify's hooks. */
export const AUTHORIZE_ROUTE_CONFIG = 'authorize';

/**
 * The one decorator every `/v1/admin` route carries: the permission it requires (checked by
 * the global guard through the authorization evaluator), how to find its device when it is
 * device-scoped, and its OpenAPI description and envelopes, so they cannot drift apart.
 */
export function Authorize(options: AuthorizeOptions): MethodDecorator {
  const where =
    options.check === 'service'
      ? ' (checked per device by the service)'
      : options.device === undefined
        ? ''
        : ' (or an authority on the device that holds it)';
  const description = [
    options.description,
    options.list === undefined ? undefined : listSummary(options.list),
    `Requires the permission \`${options.permission}\`${where}.`,
  ]
    .filter(Boolean)
    .join('\n\n');
  return applyDecorators(
    SetMetadata(AUTHORIZE, options),
    // Fastify's onRequest hook reads it there, to authenticate before the body is read (part 4).
    RouteConfig({ [AUTHORIZE_ROUTE_CONFIG]: options }),
    ApiBearerAuth(),
    ApiOperation({ summary: options.summary, description }),
    ApiExtension('x-permission', options.permission),
    ApiErrorResponses([401, 403, 429]),
    ApiEnvelope(options.returns, { ...options, list: options.list !== undefined }),
    ...(options.list === undefined ? [] : [ApiList(options.list)]),
  );
}

/**
 * `@Get(path)` with `@Authorize` for a list route: its parameters and envelope come from `spec`,
 * and a 400 (a bad page, sort or filter) is always possible.
 */
export function ListRoute(
  options: Omit<AuthorizeOptions, 'list' | 'noContent' | 'status'> & {
    readonly spec: ListSpec;
    readonly path?: string;
  },
): MethodDecorator {
  const { spec, path, errors = [], ...authorize } = options;
  return applyDecorators(
    path === undefined ? Get() : Get(path),
    Authorize({ ...authorize, list: spec, errors: [400, ...errors.filter((status) => status !== 400)] }),
  );
}
