import type { FastifyReply, FastifyRequest } from 'fastify';

/*
 * Nest applies a route's fixed status (201 for every POST) after interceptors run, so a handler
 * cannot choose 200/201/202/204 per call. The envelope records the status it wants here and an
 * onSend hook applies it just before the reply is written.
 */
const wanted = new WeakMap<FastifyRequest, number>();

export function overrideStatus(request: FastifyRequest, status: number): void {
  wanted.set(request, status);
}

export function applyStatusOverride(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  const status = wanted.get(request);
  if (status === undefined || reply.statusCode >= 400) return payload;
  void reply.code(status);
  if (status === 204) {
    void reply.removeHeader('content-type');
    return null;
  }
  return payload;
}
