import { PREVIEW_ROUTE_CONFIG } from '../http/openapi/describe.decorator.js';
import { routeConfigPart } from '../http/route-parts.js';
import { Injectable, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { from, type Observable } from 'rxjs';
import { authContextOf } from '../auth/auth-context.js';
import { ApiError } from '../http/api-error.js';
import { withoutSecrets } from '../http/secret-fields.js';
import { overrideStatus } from '../http/status-override.js';
import { isValidIdempotencyKey, requestFingerprint } from './fingerprint.js';
import { IdempotencyKeysRepository, type KeyScope, type StoredResponse } from './idempotency-keys.repository.js';

/** Response headers that belong to the stored response and are sent again on a replay. */
const KEPT_HEADERS = ['content-type', 'etag', 'location', 'retry-after'];

// Claimed keys of requests in flight, completed by the onSend hook with the final response.
const inFlight = new WeakMap<FastifyRequest, KeyScope>();

/**
 * `Idempotency-Key` on every POST (part 8), run by the one global interceptor after the guard
 * (it needs the actor) and around the envelope: a claimed key lets the request run and its
 * final response (whatever the filter made of it) is stored by `completeIdempotentResponse`; a
 * completed key replays the stored status and body with `Idempotent-Replayed: true` and runs
 * nothing.
 */
@Injectable()
export class IdempotentRequests {
  constructor(private readonly store: IdempotencyKeysRepository) {}

  /** The request's answer through its key; undefined when the request carries none (most requests). */
  around(
    request: FastifyRequest,
    reply: FastifyReply,
    handle: () => Observable<unknown>,
  ): Observable<unknown> | undefined {
    const header = request.headers['idempotency-key'];
    // A preview writes nothing, so there is nothing to make idempotent: it is neither kept nor replayed.
    if (request.method !== 'POST' || header === undefined || asksPreview(request)) return undefined;
    const actor = authContextOf(request);
    if (actor === undefined) return undefined;
    const key = Array.isArray(header) ? header.join(',') : header;
    if (!isValidIdempotencyKey(key))
      throw ApiError.field('Idempotency-Key', 'format', 'Idempotency-Key must be 1-255 printable ASCII characters');
    const scope: KeyScope = {
      actorId: actor.user_id,
      method: request.method,
      path: request.url.split('?')[0] ?? request.url,
      key,
    };
    return from(this.run(scope, request, reply, handle));
  }

  private async run(
    scope: KeyScope,
    request: FastifyRequest,
    reply: FastifyReply,
    handle: () => Observable<unknown>,
  ): Promise<unknown> {
    const claim = await this.store.claim(scope, requestFingerprint(request.body));
    switch (claim.kind) {
      case 'reused':
        throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different body', {
          idempotency_key: scope.key,
        });
      case 'in_progress':
        throw new ApiError(
          'IDEMPOTENCY_KEY_IN_PROGRESS',
          'A request with this Idempotency-Key is still running; retry shortly',
          { idempotency_key: scope.key },
          { 'Retry-After': '1' },
        );
      case 'replay':
        return replay(request, reply, claim.response);
      case 'claimed':
        inFlight.set(request, scope);
        return new Promise((resolve, reject) => handle().subscribe({ next: resolve, error: reject }));
    }
  }
}

function replay(request: FastifyRequest, reply: FastifyReply, response: StoredResponse): string | null {
  for (const [name, value] of Object.entries(response.headers)) void reply.header(name, value);
  void reply.header('idempotent-replayed', 'true');
  overrideStatus(request, response.status);
  return response.body;
}

/**
 * The onSend half: stores the final response of a claimed key, or frees the key when the
 * response is a 400 or a 5xx (not kept, part 8). Run after the status override; undefined (no
 * promise, nothing to wait for) for every request that claimed no key.
 */
export function completeIdempotentResponse(store: IdempotencyKeysRepository, logger: Logger) {
  return (request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> | undefined => {
    const scope = inFlight.get(request);
    if (scope === undefined) return undefined;
    inFlight.delete(request);
    return storeResponse(store, logger, scope, request, reply, payload);
  };
}

async function storeResponse(
  store: IdempotencyKeysRepository,
  logger: Logger,
  scope: KeyScope,
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
): Promise<unknown> {
  const status = reply.statusCode;
  try {
    if (status === 400 || status >= 500) {
      await store.release(scope);
    } else {
      const headers = Object.fromEntries(
        KEPT_HEADERS.flatMap((name) => {
          const value = reply.getHeader(name);
          return value === undefined ? [] : [[name, String(value)]];
        }),
      );
      const body =
        typeof payload === 'string'
          ? payload
          : payload === null || payload === undefined
            ? null
            : JSON.stringify(payload);
      // Secret fields (reset-pin's temporary PIN) are never kept: a replay has them null.
      await store.complete(scope, { status, headers, body: body === null ? null : withoutSecrets(request, body) });
    }
  } catch (error) {
    // The response still goes out; the key stays claimed until it counts as abandoned.
    logger.warn({
      msg: 'could not store the idempotent response',
      key: scope.key,
      err: error instanceof Error ? error.message : String(error),
    });
  }
  return payload;
}

/**
 * Whether the request is a preview (`?dry_run=true` on a route that previews, part 6.17). On any
 * other route the parameter means nothing, and the write is kept under its key as usual.
 */
function asksPreview(request: FastifyRequest): boolean {
  return (
    routeConfigPart(request, PREVIEW_ROUTE_CONFIG) === true &&
    (request.query as Record<string, unknown> | undefined)?.dry_run === 'true'
  );
}
