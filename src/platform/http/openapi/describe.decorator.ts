import { applyDecorators, Get, type Type } from '@nestjs/common';
import type { ListSpec } from '../list/list-spec.js';
import { addRouteConfig, describeOperation } from '../route-parts.js';
import { ApiEnvelope, type EnvelopeOptions } from './api-envelope.decorator.js';
import { ApiList, listSummary } from './api-list.decorator.js';

/** How a route is documented: its operation and its envelopes, apart from its permission and caching. */
export interface RouteDocs extends Omit<EnvelopeOptions, 'list'> {
  /** One line for the OpenAPI operation. */
  readonly summary: string;
  readonly description?: string;
  /** The model in the success envelope (`data`, or each item of a list). */
  readonly returns: Type;
}

/** The route config key of a route that answers `?dry_run=true` with a preview (part 6.17). */
export const PREVIEW_ROUTE_CONFIG = 'preview';

/**
 * `@Describe({ summary, returns, errors, … })`: the route's OpenAPI operation and envelopes. A
 * route that previews (`preview: true`) is also marked for the request hooks, which refuse
 * `dry_run` on every other write.
 */
export function Describe(docs: RouteDocs): MethodDecorator {
  const { summary, description, returns, ...envelope } = docs;
  return applyDecorators(
    describeOperation({ summary, description }),
    ApiEnvelope(returns, envelope),
    ...(docs.preview === true ? [addRouteConfig({ [PREVIEW_ROUTE_CONFIG]: true })] : []),
  );
}

/** The route config key under which a list route hands its spec to the request hooks. */
export const LIST_ROUTE_CONFIG = 'list';

/**
 * `@Get(path)` documented as a list of `returns`: its parameters, envelope and description come
 * from `spec` (the one that parses its query), and a 400 (a bad page, sort or filter) is always
 * possible. Its permission is `@Authorize`'s, its caching `@CachedRead`'s.
 */
export function ListRoute(
  options: Omit<RouteDocs, 'noContent' | 'status' | 'preview'> & {
    readonly spec: ListSpec;
    readonly path?: string;
  },
): MethodDecorator {
  const { spec, path, errors = [], summary, description, returns, ...envelope } = options;
  return applyDecorators(
    path === undefined ? Get() : Get(path),
    describeOperation({ summary, description, list: listSummary(spec) }),
    ApiEnvelope(returns, { ...envelope, list: true, errors: [400, ...errors.filter((status) => status !== 400)] }),
    ApiList(spec),
    addRouteConfig({ [LIST_ROUTE_CONFIG]: spec }),
  );
}
