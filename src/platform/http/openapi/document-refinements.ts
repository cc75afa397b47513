import type { OpenAPIObject } from '@nestjs/swagger';
import { PATH_ID_PATTERN } from '../id.pipe.js';
import { errorResponseObject } from './api-envelope.decorator.js';

/*
 * What the decorators cannot say about the document as a whole, applied once after Nest builds it,
 * so that a client generated from it (openapi-typescript, test/e2e/openapi-client.spec.ts) can make
 * every call the service accepts and read every answer it sends.
 */
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Idempotency serves every POST (part 8): each documents the header. */
const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the first completed answer is kept 24 h and replayed (`Idempotent-Replayed: true`); the same key with another body is 422 `IDEMPOTENCY_KEY_REUSED`.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

function addIdempotencyKey(operation: Json): void {
  const parameters = Array.isArray(operation.parameters) ? (operation.parameters as Json[]) : [];
  if (!parameters.some((parameter) => parameter.in === 'header' && parameter.name === IDEMPOTENCY_KEY.name))
    operation.parameters = [...parameters, IDEMPOTENCY_KEY];
}

/** A body whose schema requires nothing may be left out (`POST /inbox/1/send-push` with no body works). */
function relaxEmptyBody(operation: Json, schemas: Record<string, Json>): void {
  const body = operation.requestBody;
  if (!isObject(body) || !isObject(body.content)) return;
  const json = body.content['application/json'];
  const ref = isObject(json) && isObject(json.schema) ? json.schema.$ref : undefined;
  if (typeof ref !== 'string') return;
  const schema = schemas[ref.replace('#/components/schemas/', '')];
  const required = schema?.required;
  if (!Array.isArray(required) || required.length === 0) body.required = false;
}

/**
 * `nullable` beside `allOf: [$ref]` does not admit null in OpenAPI 3.0 (the referenced schema
 * still demands an object), and strict validators reject the service's `null`. Say "this object
 * or null" in the form 3.0 allows.
 */
function nullableReferences(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(nullableReferences);
  if (!isObject(node)) return;
  for (const value of Object.values(node)) nullableReferences(value);
  const allOf = node.allOf;
  if (node.nullable !== true || !Array.isArray(allOf) || allOf.length !== 1) return;
  delete node.allOf;
  delete node.nullable;
  delete node.type;
  node.anyOf = [allOf[0], { type: 'object', nullable: true, enum: [null] }];
}

/**
 * The answers part 13 puts on routes by their kind rather than by what they do, declared here once
 * so that no route can forget one: 431 on every route and 414 on every route with a path
 * parameter (the HTTP layer's refusals), 503 on every authenticated route (a dependency down;
 * 400, 401, 403 and 429 are declared by `@Authorize`), 413 and 415 on every route whose body is
 * read (POST, PUT, PATCH and DELETE), 409 and 422 on every POST (an `Idempotency-Key` still in flight, or reused with another
 * body). Their descriptions and examples come from the error table like every other.
 */
function declareCommonAnswers(method: string, operation: Json, shared: Json): void {
  const responses = isObject(operation.responses) ? operation.responses : (operation.responses = {});
  const hasPathParameter =
    Array.isArray(operation.parameters) &&
    (operation.parameters as Json[]).some((parameter) => parameter.in === 'path');
  // Every route: headers over the limit (Node's parser answers before any route); a path segment
  // over the limit where the path has one (the router's).
  const everyRoute = [431, ...(hasPathParameter ? [414] : [])];
  // Public routes (health, docs, SCIM's discovery) answer only that beside what they declare.
  const authenticated = Array.isArray(operation.security) && operation.security.length > 0;
  const statuses = [
    ...everyRoute,
    ...(authenticated
      ? [
          503,
          // Every method whose body Fastify reads (a DELETE's too, when it is sent one).
          ...(['post', 'put', 'patch', 'delete'].includes(method) ? [413, 415] : []),
          ...(method === 'post' ? [409, 422] : []),
        ]
      : []),
  ];
  for (const status of statuses) {
    // One shared response per status (components.responses), not a copy in every operation.
    const name = `Error${status}`;
    shared[name] ??= errorResponseObject(status);
    responses[String(status)] ??= { $ref: `#/components/responses/${name}` };
  }
}

/** Path ids are positive safe integers in plain decimal (part 1), not any JSON number. */
function integerPathIds(operation: Json): void {
  if (!Array.isArray(operation.parameters)) return;
  for (const parameter of operation.parameters as Json[]) {
    const schema = parameter.schema;
    if (parameter.in !== 'path' || !isObject(schema) || schema.type !== 'number') continue;
    parameter.schema = {
      type: 'integer',
      format: 'int64',
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      pattern: PATH_ID_PATTERN,
    };
  }
}

export function refineDocument(document: OpenAPIObject): OpenAPIObject {
  const schemas = (document.components?.schemas ?? {}) as Record<string, Json>;
  const components = (document.components ??= {});
  const shared = (components.responses ??= {}) as Json;
  for (const item of Object.values(document.paths) as Json[]) {
    for (const [method, operation] of Object.entries(item)) {
      if (!isObject(operation)) continue;
      if (method === 'post') addIdempotencyKey(operation);
      relaxEmptyBody(operation, schemas);
      declareCommonAnswers(method, operation, shared);
      integerPathIds(operation);
    }
  }
  nullableReferences(document.components);
  return document;
}
