import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ErrorsIn } from '../platform/http/error-dialect.js';
import { describeOperation } from '../platform/http/route-parts.js';
import { ERROR_SCHEMA, SCIM_ERRORS, SCIM_TYPES } from './scim-error.js';

/** SCIM's error schema (RFC 7644 §3.12), as every refusal of a /scim/v2 route is written. */
const SCIM_ERROR_BODY = {
  type: 'object',
  required: ['schemas', 'status'],
  properties: {
    schemas: { type: 'array', items: { type: 'string', enum: [ERROR_SCHEMA] } },
    status: { type: 'string', example: '400' },
    scimType: { type: 'string', enum: [...SCIM_TYPES] },
    detail: { type: 'string' },
  },
};

const MEANING: Readonly<Record<number, string>> = {
  400: 'Bad input: scimType says which kind (invalidFilter, invalidValue, invalidPath, noTarget, mutability, invalidSyntax)',
  401: 'No valid token',
  403: 'The token’s user lacks scim.provision, or the write breaks a rule of part 5 (rank, self, delegation)',
  404: 'No live resource has this id',
  409: 'uniqueness: the userName, email, externalId or group name belongs to another resource',
  412: 'If-Match does not match the current version',
  413: 'The body exceeds 1 MiB',
  415: 'The body is neither application/scim+json nor application/json',
  429: 'Too many requests: Retry-After says when to try again',
  503: 'A dependency (the database) is unavailable',
};

export interface ScimRouteDocs {
  readonly summary: string;
  readonly description?: string;
  /** The success status; 204 answers no body. */
  readonly status: 200 | 201 | 204;
  readonly errors: readonly number[];
  /** The route reads a body (a SCIM resource or a PatchOp). */
  readonly body?: string;
}

/**
 * A /scim/v2 route (part 6.19): its refusals in SCIM's error schema (the one exception path asks
 * the route for its dialect), and its OpenAPI operation in SCIM's media type rather than the
 * admin API's envelope.
 */
export function ScimRoute(docs: ScimRouteDocs): MethodDecorator {
  // A body is read by every method but GET (a DELETE's too, when it is sent one): 413 and 415 can answer.
  const statuses = [
    ...new Set([...docs.errors, 503, ...(docs.body === undefined && docs.status !== 204 ? [] : [413, 415])]),
  ];
  return applyDecorators(
    ApiTags('scim'),
    ErrorsIn(SCIM_ERRORS),
    describeOperation({
      summary: docs.summary,
      ...(docs.description === undefined ? {} : { description: docs.description }),
    }),
    ApiProduces('application/scim+json'),
    ...(docs.body === undefined
      ? []
      : [
          ApiConsumes('application/scim+json', 'application/json'),
          ApiBody({ description: docs.body, schema: { type: 'object', additionalProperties: true } }),
        ]),
    docs.status === 204
      ? ApiResponse({ status: 204, description: 'Done: no body' })
      : ApiResponse({
          status: docs.status,
          description: docs.status === 201 ? 'Created: the resource, with Location and ETag' : 'The SCIM document',
          schema: { type: 'object', additionalProperties: true },
        }),
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: MEANING[status] ?? 'Refused',
        // `schema`, not `content`: it replaces the admin envelope `@Authorize` documents for 401/403/429.
        schema: SCIM_ERROR_BODY,
      }),
    ),
  );
}
