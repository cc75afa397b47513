import type { FastifyRequest } from 'fastify';

// Fields of a response's `data` that are shown once and must never be stored (by the
// idempotency store, for replays). Set by the envelope from the handler's result.
const secrets = new WeakMap<FastifyRequest, readonly string[]>();

export function markSecretFields(request: FastifyRequest, fields: readonly string[]): void {
  secrets.set(request, fields);
}

/** The body as it may be kept: each secret field of `data` replaced by null. */
export function withoutSecrets(request: FastifyRequest, body: string): string {
  const fields = secrets.get(request);
  if (fields === undefined) return body;
  const envelope = JSON.parse(body) as { data?: Record<string, unknown> };
  if (envelope.data !== undefined) for (const field of fields) if (field in envelope.data) envelope.data[field] = null;
  return JSON.stringify(envelope);
}
