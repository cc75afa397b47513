import type { OpenAPIObject } from '@nestjs/swagger';

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

export function refineDocument(document: OpenAPIObject): OpenAPIObject {
  const schemas = (document.components?.schemas ?? {}) as Record<string, Json>;
  for (const item of Object.values(document.paths) as Json[]) {
    for (const [method, operation] of Object.entries(item)) {
      if (!isObject(operation)) continue;
      if (method === 'post') addIdempotencyKey(operation);
      relaxEmptyBody(operation, schemas);
    }
  }
  nullableReferences(document.components);
  return document;
}
