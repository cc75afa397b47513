import { applyDecorators, type Type } from '@nestjs/common';
import { ApiExtraModels, ApiQuery, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { codesOf, ERRORS } from '../error-codes.js';
import { ErrorEnvelopeDto, FeedMetaDto, ListMetaDto, MetaDto } from './envelope.dto.js';
import { AccessChangeDto, AccessPreviewDto } from './preview.dto.js';

/** "`PERMISSION_DENIED`: the caller lacks …; `ROLE_FORBIDDEN`: …" for one status, from the error table. */
function errorDescription(status: number): string {
  const codes = codesOf(status);
  return codes.length === 0 ? 'Error' : codes.map((code) => `\`${code}\`: ${ERRORS[code].meaning}`).join('; ');
}

/** An error envelope of the status's first code, as the service sends it. */
function errorExample(status: number): object {
  const code = codesOf(status)[0] ?? 'INTERNAL_ERROR';
  const spec: { readonly meaning: string; readonly example?: object } = ERRORS[code];
  return {
    success: false,
    error: { code, message: spec.meaning, details: spec.example ?? {} },
    meta: { request_id: '3f0c7a3e-8d55-4d7e-9b8e-1f6f5b3c2a10' },
  };
}

export interface EnvelopeOptions {
  readonly status?: 200 | 201 | 202;
  readonly list?: boolean;
  /** A feed read by cursor: `data` is an array, `meta.next_after` the next cursor. */
  readonly feed?: boolean;
  readonly errors?: readonly number[];
  /** Also answers 204 with no body (delete of a deleted record, restore of a live one, …). */
  readonly noContent?: string;
  /** A list whose `meta` says more than a page's (documented by this model). */
  readonly listMeta?: Type;
  /** Answers `?dry_run=true` with a preview (part 6.17) instead of writing. */
  readonly preview?: boolean;
}

/** Documents a route's success envelope around `model` and its error envelopes. */
export function ApiEnvelope(model: Type, options: EnvelopeOptions = {}): MethodDecorator & ClassDecorator {
  const list = options.list === true || options.listMeta !== undefined;
  // A write answering 201 previews with a 200 of its own; one answering 200 shares it.
  const separatePreview = options.preview === true && (options.status ?? 200) !== 200;
  const data =
    list || options.feed === true
      ? { type: 'array', items: { $ref: getSchemaPath(model) } }
      : options.preview === true && !separatePreview
        ? { oneOf: [{ $ref: getSchemaPath(model) }, { $ref: getSchemaPath(AccessPreviewDto) }] }
        : { $ref: getSchemaPath(model) };
  const metaModel = options.feed === true ? FeedMetaDto : list ? (options.listMeta ?? ListMetaDto) : MetaDto;
  const meta = { $ref: getSchemaPath(metaModel) };
  return applyDecorators(
    ApiExtraModels(model, MetaDto, ListMetaDto, FeedMetaDto, ErrorEnvelopeDto, metaModel),
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
    ...(separatePreview
      ? [
          ApiResponse({
            status: 200,
            description: 'The preview (`dry_run=true`): nothing written',
            schema: {
              type: 'object',
              required: ['success', 'data', 'meta'],
              properties: {
                success: { type: 'boolean', enum: [true] },
                data: { $ref: getSchemaPath(AccessPreviewDto) },
                meta: { $ref: getSchemaPath(MetaDto) },
              },
            },
          }),
        ]
      : []),
    ...(options.preview === true
      ? [
          ApiExtraModels(AccessPreviewDto, AccessChangeDto),
          ApiQuery({
            name: 'dry_run',
            required: false,
            enum: ['true', 'false'],
            description:
              'true: write nothing and answer 200 `{dry_run, outcome, access_changes}` (part 6.17); errors as the write',
          }),
        ]
      : []),
    ApiErrorResponses(options.errors ?? []),
  );
}

/** An error response of the document as `ApiErrorResponses` writes it, for the whole-document refinements. */
export function errorResponseObject(status: number): Record<string, unknown> {
  return {
    description: errorDescription(status),
    content: {
      'application/json': {
        schema: { allOf: [{ $ref: getSchemaPath(ErrorEnvelopeDto) }], example: errorExample(status) },
      },
    },
  };
}

/** Documents error envelopes for the given statuses. */
export function ApiErrorResponses(statuses: readonly number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(ErrorEnvelopeDto, MetaDto),
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: errorDescription(status),
        schema: { allOf: [{ $ref: getSchemaPath(ErrorEnvelopeDto) }], example: errorExample(status) },
      }),
    ),
  );
}
