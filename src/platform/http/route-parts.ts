import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiOperation } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';

/*
 * A route is declared by several decorators, each for one concern (who may call it, how it is
 * documented, how it is cached). Two things they all add to are assembled here: the Fastify route
 * config that the request hooks read (each concern under its own key), and the OpenAPI operation
 * (summary, and a description made of each concern's sentences), so the decorators can be written
 * in any order and none needs to know the others.
 */

const CONFIG_PARTS = 'admin-api:route-config-parts';
const OPERATION_PARTS = 'admin-api:operation-parts';

/** What each concern says in the OpenAPI operation; the description lists them in this order. */
export interface OperationPart {
  readonly summary?: string;
  /** What the route does (`@Describe`). */
  readonly description?: string;
  /** What a list filters, searches and sorts by (`@ListRoute`). */
  readonly list?: string;
  /** The permission it requires (`@Authorize`). */
  readonly requires?: string;
}

function merged<T extends object>(key: string, target: object, part: T): T {
  const parts = { ...((Reflect.getMetadata(key, target) as T | undefined) ?? {}), ...part };
  Reflect.defineMetadata(key, parts, target);
  return parts;
}

/** Adds `part` to the route's Fastify config, beside what the route's other decorators added. */
export function addRouteConfig(part: Record<string, unknown>): MethodDecorator {
  return (target, key, descriptor) => {
    RouteConfig(merged(CONFIG_PARTS, descriptor.value as object, part))(target, key, descriptor);
  };
}

/** Adds `part` to the route's OpenAPI operation. */
export function describeOperation(part: OperationPart): MethodDecorator {
  return (target, key, descriptor) => {
    const parts = merged(OPERATION_PARTS, descriptor.value as object, part);
    const description = [parts.description, parts.list, parts.requires].filter(Boolean).join('\n\n');
    ApiOperation({ summary: parts.summary ?? '', description })(target, key, descriptor);
  };
}

/** The part of a request's route config under `key` (what one concern's decorator added). */
export function routeConfigPart<T>(request: FastifyRequest, key: string): T | undefined {
  return (request.routeOptions.config as unknown as Readonly<Record<string, unknown>>)[key] as T | undefined;
}
