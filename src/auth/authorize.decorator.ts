import { applyDecorators, Get, SetMetadata, type Type } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { ApiBearerAuth, ApiExtension, ApiOperation } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiEnvelope, ApiErrorResponses, type EnvelopeOptions } from '../common/openapi/api-envelope.decorator.js';
import type { ListSpec } from '../common/list/list-spec.js';
import { ApiList, listSummary } from '../common/openapi/api-list.decorator.js';
import type { PermissionCode } from './permissions.js';

/**
 * Finds the device a device-scoped route acts on (layer 3c), e.g. from a path parameter or by
 * loading the addressed record; throws the record's 404 when it does not exist, so a missing
 * record is a 404 before any device check.
 */
export type DeviceLocator = (request: FastifyRequest, modules: ModuleRef) => Promise<number | undefined>;

export interface AuthorizeOptions extends Omit<EnvelopeOptions, 'list'> {
  readonly permission: PermissionCode;
  /** One line for the OpenAPI operation. */
  readonly summary: string;
  readonly description?: string;
  readonly device?: DeviceLocator;
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
  /** A list route: the spec that parses its query, from which its parameters are documented. */
  readonly list?: ListSpec;
}

export const AUTHORIZE = 'admin-api:authorize';

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
