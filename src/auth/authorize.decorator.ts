import { applyDecorators, SetMetadata } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { ApiBearerAuth, ApiExtension, ApiOperation } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiErrorResponses } from '../common/openapi/api-envelope.decorator.js';
import type { PermissionCode } from './permissions.js';

/**
 * Finds the device a device-scoped route acts on (layer 3c), e.g. from a path parameter or by
 * loading the addressed record; throws the record's 404 when it does not exist, so a missing
 * record is a 404 before any device check.
 */
export type DeviceLocator = (request: FastifyRequest, modules: ModuleRef) => Promise<number | undefined>;

export interface AuthorizeOptions {
  readonly permission: PermissionCode;
  /** One line for the OpenAPI operation. */
  readonly summary: string;
  readonly description?: string;
  readonly device?: DeviceLocator;
}

export const AUTHORIZE = 'admin-api:authorize';

/**
 * The one decorator every `/v1/admin` route carries: the permission it requires (checked by
 * the global guard through the authorization evaluator), how to find its device when it is
 * device-scoped, and its OpenAPI description, so the three cannot drift apart.
 */
export function Authorize(options: AuthorizeOptions): MethodDecorator {
  const description = [options.description, `Requires the permission \`${options.permission}\`.`].filter(Boolean).join('\n\n');
  return applyDecorators(
    SetMetadata(AUTHORIZE, options),
    ApiBearerAuth(),
    ApiOperation({ summary: options.summary, description }),
    ApiExtension('x-permission', options.permission),
    ApiErrorResponses([401, 403, 429]),
  );
}
