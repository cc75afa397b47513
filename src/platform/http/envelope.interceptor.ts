import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { map, type Observable } from 'rxjs';
import { listMeta, resourceEnvelope } from './envelope.js';
import { markSecretFields } from './secret-fields.js';
import { overrideStatus } from './status-override.js';
import {
  AcceptedResponse,
  BareResponse,
  FeedResponse,
  ListResponse,
  NoContent,
  RawJson,
  ResourceResponse,
} from './responses.js';

/** What may run around the envelope: idempotent replays (part 8); undefined when it does not apply. */
export interface AroundEnvelope {
  around(
    request: FastifyRequest,
    reply: FastifyReply,
    handle: () => Observable<unknown>,
  ): Observable<unknown> | undefined;
}

/**
 * The one global interceptor (each interceptor costs Nest an rxjs chain per request, measured):
 * wraps every handler result in the success envelope, and sets ETag, Location and status;
 * `around` (idempotency) wraps that. Cached resources arrive as `RawJson` and are spliced into
 * the envelope as text, because re-parsing and re-serialising them halves throughput (measured;
 * see ARCHITECTURE.md).
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly outer?: AroundEnvelope) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    const handle = (): Observable<unknown> =>
      next.handle().pipe(map((result: unknown) => this.envelope(result, request, reply)));
    return this.outer?.around(request, reply, handle) ?? handle();
  }

  private envelope(result: unknown, request: FastifyRequest, reply: FastifyReply): unknown {
    const requestId = request.id;
    if (result instanceof NoContent) {
      overrideStatus(request, 204);
      return undefined;
    }
    if (result instanceof BareResponse) {
      overrideStatus(request, result.options.status ?? 200);
      void reply.headers(result.options.headers ?? {}).header('content-type', result.options.contentType);
      return JSON.stringify(result.body);
    }
    if (result instanceof ListResponse) {
      const meta = listMeta(requestId, result);
      if (result.items instanceof RawJson) {
        void reply.header('content-type', 'application/json; charset=utf-8');
        return resourceEnvelope(result.items.json, meta);
      }
      return { success: true, data: result.items, meta };
    }
    if (result instanceof FeedResponse) {
      overrideStatus(request, 200);
      const feed = result as FeedResponse<unknown>;
      return { success: true, data: feed.items, meta: { request_id: requestId, next_after: feed.nextAfter } };
    }
    if (result instanceof AcceptedResponse) {
      overrideStatus(request, 202);
      const accepted = result as AcceptedResponse<object>;
      void reply.header('location', accepted.location).header('retry-after', String(accepted.retryAfterSeconds));
      return { success: true, data: accepted.data, meta: { request_id: requestId } };
    }
    if (result instanceof ResourceResponse) {
      const { data, options } = result as ResourceResponse<object>;
      overrideStatus(request, options.status ?? 200);
      const version =
        options.version ?? (data instanceof RawJson ? undefined : (data as { version?: unknown }).version);
      if (typeof version === 'number') void reply.header('etag', `"${version}"`);
      if (options.location !== undefined) void reply.header('location', options.location);
      if (options.secretFields !== undefined) markSecretFields(request, options.secretFields);
      const meta: Record<string, unknown> = { request_id: requestId };
      if (options.cache !== undefined) meta.cache = options.cache;
      if (data instanceof RawJson) {
        void reply.header('content-type', 'application/json; charset=utf-8');
        return resourceEnvelope(data.json, meta);
      }
      return { success: true, data, meta };
    }
    overrideStatus(request, 200);
    return { success: true, data: result ?? null, meta: { request_id: requestId } };
  }
}
