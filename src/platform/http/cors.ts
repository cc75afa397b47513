import type { FastifyInstance } from 'fastify';

/** What a browser may send and read (part 1). */
const ALLOWED_METHODS = 'GET, POST, PATCH, DELETE';
const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key, If-Match, X-Request-Id, Prefer';
const EXPOSED_HEADERS = 'ETag, Location, Retry-After, X-Request-Id';
/** How long a browser may reuse a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * CORS for the exact origins of `CORS_ORIGINS` (part 1): their requests get
 * `Access-Control-Allow-Origin` with that origin, and their preflight is answered 204 before
 * routing, authentication or any body. Other origins get no CORS header at all, so the browser
 * keeps its own refusal. Nothing is registered when no origin is configured.
 */
export function allowOrigins(fastify: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  fastify.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    // Every answer may differ by Origin: shared caches must keep them apart.
    void reply.header('vary', 'Origin');
    if (origin === undefined || !allowed.has(origin)) {
      done();
      return;
    }
    void reply.header('access-control-allow-origin', origin);
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
    if (!preflight) {
      void reply.header('access-control-expose-headers', EXPOSED_HEADERS);
      done();
      return;
    }
    void reply
      .code(204)
      .header('access-control-allow-methods', ALLOWED_METHODS)
      .header('access-control-allow-headers', ALLOWED_HEADERS)
      .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS))
      .send();
  });
}
