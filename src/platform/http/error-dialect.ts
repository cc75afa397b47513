import type { FastifyRequest } from 'fastify';
import type { ApiError } from './api-error.js';
import { addRouteConfig, routeConfigPart } from './route-parts.js';

/**
 * How a route's refusals are written when they are not the contract's envelope: a protocol of
 * its own (SCIM, part 6.19) has its own error schema. Every refusal of such a route (authentication
 * before the body, the body's parser, guards, the handler) goes through the one exception path,
 * which asks the route for its dialect; the error table and its mapping stay the one source.
 */
export interface ErrorDialect {
  readonly contentType: string;
  /** The status and body that say `error` in this dialect. */
  render(error: ApiError, requestId: string): { readonly status: number; readonly body: unknown };
}

const ERROR_DIALECT_CONFIG = 'errorDialect';

/** The route's refusals are written in `dialect`. */
export function ErrorsIn(dialect: ErrorDialect): MethodDecorator {
  return addRouteConfig({ [ERROR_DIALECT_CONFIG]: dialect });
}

/** The dialect of the request's route; undefined for the envelope (and for requests no route matched). */
export function errorDialectOf(request: FastifyRequest): ErrorDialect | undefined {
  return request.routeOptions.config === undefined
    ? undefined
    : routeConfigPart<ErrorDialect>(request, ERROR_DIALECT_CONFIG);
}
