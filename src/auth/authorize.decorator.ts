import { applyDecorators, SetMetadata, type Type } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { ApiBearerAuth, ApiExtension, ApiOperation } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiEnvelope, ApiErrorResponses, type EnvelopeOptions } from '../common/openapi/api-envelope.decorator.js';
import type { PermissionCode } from './permissions.js';

/**
 * Finds the device a device-scoped route acts on (layer 3c), e.g. from a path parameter or by
 * loading the addressed record; throws the record's 404 when it does not exist, so a missing
 * record is a 404 before any device check.
 */
export type DeviceLocator = (request: FastifyRequest, modules: ModuleRef) => Promise<number | undefined>;

export interface AuthorizeOptions extends EnvelopeOptions {
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
  const description = [options.description, `Requires the permission \`${options.permission}\`${where}.`]
    .filter(Boolean)
    .join('\n\n');
  return applyDecorators(
    SetMetadata(AUTHORIZE, options),
    ApiBearerAuth(),
    ApiOperation({ summary: options.summary, description }),
    ApiExtension('x-permission', options.permission),
    ApiErrorResponses([401, 403, 429]),
    ApiEnvelope(options.returns, options),
  );
}
