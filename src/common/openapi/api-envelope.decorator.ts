import { applyDecorators, type Type } from '@nestjs/common';
import { ApiExtraModels, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { ErrorEnvelopeDto, ListMetaDto, MetaDto } from './envelope.dto.js';

const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'VALIDATION_FAILED or MALFORMED_JSON',
  401: 'Missing, invalid or expired token, or invalid session',
  403: 'ROLE_FORBIDDEN, PERMISSION_DENIED, ROLE_ESCALATION_FORBIDDEN or DELEGATION_FORBIDDEN',
  404: 'The record (or one the body refers to) does not exist',
  409: 'Conflict with the current state',
  412: 'If-Match does not match the current version',
  413: 'Body larger than 1 MiB',
  415: 'Body is not application/json',
  422: 'The request is well-formed but breaks a rule',
  429: 'RATE_LIMITED (see Retry-After)',
  500: 'INTERNAL_ERROR',
  503: 'SERVICE_UNAVAILABLE: the database is unreachable (see Retry-After)',
};

interface EnvelopeOptions {
  readonly status?: 200 | 201 | 202;
  readonly list?: boolean;
  readonly errors?: readonly number[];
  /** Also answers 204 with no body (delete of a deleted record, restore of a live one, …). */
  readonly noContent?: string;
}

/** Documents a route's success envelope around `model` and its error envelopes. */
export function ApiEnvelope(model: Type, options: EnvelopeOptions = {}): MethodDecorator & ClassDecorator {
  const data =
    options.list === true ? { type: 'array', items: { $ref: getSchemaPath(model) } } : { $ref: getSchemaPath(model) };
  const meta = { $ref: getSchemaPath(options.list === true ? ListMetaDto : MetaDto) };
  return applyDecorators(
    ApiExtraModels(model, MetaDto, ListMetaDto, ErrorEnvelopeDto),
    ApiResponse({
      status: options.status ?? 200,
      description: 'Success envelope',
      schema: {
        type: 'object',
        required: ['success', 'data', 'meta'],
        properties: { success: { type: 'boolean', enum: [true] }, data, meta },
      },
    }),
    ...(options.noContent === undefined ? [] : [ApiResponse({ status: 204, description: options.noContent })]),
    ApiErrorResponses(options.errors ?? []),
  );
}

/** Documents error envelopes for the given statuses. */
export function ApiErrorResponses(statuses: readonly number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(ErrorEnvelopeDto, MetaDto),
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: ERROR_DESCRIPTIONS[status] ?? 'Error',
        schema: { $ref: getSchemaPath(ErrorEnvelopeDto) },
      }),
    ),
  );
}
