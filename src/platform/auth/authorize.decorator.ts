import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiExtension } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiErrorResponses } from '../http/openapi/api-envelope.decorator.js';
import { addRouteConfig, describeOperation, routeConfigPart } from '../http/route-parts.js';
import type { DeviceOf } from './device-locators.js';
import type { PermissionCode } from './permissions.js';

/** Who may call a route: the permission it requires and how to find its device. */
export interface RouteAccess {
  readonly permission: PermissionCode;
  /** The device a device-scoped route acts on (layer 3c): `deviceOf(record, param)`. */
  readonly device?: DeviceOf;
  /**
   * `service`: the guard checks layers 1 and 2 only and the service applies layer 3 where it
   * knows the device(s): list row filtering, bulk per-item checks, a device named in the body
   * (checked after validation and the 404 of the device).
   */
  readonly check?: 'route' | 'service';
}

export const AUTHORIZE = 'admin-api:authorize';
/** The route config key under which `@Authorize` hands its rule to Fastify's hooks. */
export const AUTHORIZE_ROUTE_CONFIG = 'authorize';

/**
 * The one access decorator every `/v1/admin` route carries: the permission it requires (checked by
 * the global guard through the access model) and how to find its device when it is device-scoped.
 * It also documents what it decides (bearer auth, `x-permission`, 401/403/429 and the sentence
 * naming the permission); the route's own documentation is `@Describe` or `@ListRoute`, its
 * caching `@CachedRead`.
 */
export function Authorize(access: RouteAccess): MethodDecorator {
  const where =
    access.check === 'service'
      ? ' (checked per device by the service)'
      : access.device === undefined
        ? ''
        : ' (or an authority on the device that holds it)';
  return applyDecorators(
    SetMetadata(AUTHORIZE, access),
    // Fastify's onRequest hook reads it there, to authenticate before the body is read (part 4).
    addRouteConfig({ [AUTHORIZE_ROUTE_CONFIG]: access }),
    ApiBearerAuth(),
    describeOperation({ requires: `Requires the permission \`${access.permission}\`${where}.` }),
    ApiExtension('x-permission', access.permission),
    ApiErrorResponses([401, 403, 429]),
  );
}

/** The route's `@Authorize`, from the request (in Fastify's hooks, before Nest's pipeline). */
export function routeAccessOf(request: FastifyRequest): RouteAccess | undefined {
  return routeConfigPart<RouteAccess>(request, AUTHORIZE_ROUTE_CONFIG);
}
