import { Logger } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger as Pino } from 'pino';
import { ApiError, BODY_LIMIT_BYTES, BULK_BODY_LIMIT_BYTES } from './api-error.js';
import { errorDialectOf } from './error-dialect.js';
import { errorBody } from './error-mapping.js';
import { allowOrigins } from './cors.js';
import { sendError } from './exception.filter.js';
import { resolveRequestId, runInRequestContext, type RequestContext } from './request-context.js';
import { applyStatusOverride } from './status-override.js';

/**
 * The Fastify adapter with the contract's body limit, request ids and no default parsers.
 * `trustProxyHops` is how many proxies' X-Forwarded-For entries `request.ip` may use: a client
 * cannot choose its own address (and so escape a per-address limit) by sending the header.
 */
export function createHttpAdapter(trustProxyHops = 0): FastifyAdapter {
  return new FastifyAdapter({
    // proxy-addr asks about each hop from the socket inwards: trust exactly the first N.
    trustProxy: trustProxyHops === 0 ? false : (_address: string, hop: number) => hop < trustProxyHops,
    bodyLimit: BODY_LIMIT_BYTES,
    // A request (headers and body) must arrive within 30 s: a client trickling a body, or the
    // rest of a refused one being discarded, cannot hold a connection for ever.
    requestTimeout: REQUEST_TIMEOUT_MS,
    genReqId: (raw: IncomingMessage) => resolveRequestId(raw.headers['x-request-id']),
    requestIdHeader: false,
    logger: false,
    // No route uses Nest middleware: middie would only add a hook run on every request.
    skipMiddie: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: routerError,
    clientErrorHandler: clientError,
  });
}

const MAX_PARAM_LENGTH = 200;
const REQUEST_TIMEOUT_MS = 30_000;

/** Connections whose request was refused before its body was read (authentication, part 4). */
const answeredBeforeBody = new WeakSet<object>();

/*
 * The HTTP layer's own refusals, answered in the contract's envelope with X-Request-Id and
 * Cache-Control like every other answer (part 1): 414 URI_TOO_LONG and 431 HEADERS_TOO_LARGE have
 * codes of their own; the contract has none for 408, which is VALIDATION_FAILED with that status
 * and the part of the request named.
 */

/** The router's: a path segment over the limit (414) or a path that is not valid percent-encoding (400). */
function routerError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
  const refusal = tooLong
    ? new ApiError('URI_TOO_LONG', `A path segment is longer than ${MAX_PARAM_LENGTH} characters`, {
        field: 'path',
        max_length: MAX_PARAM_LENGTH,
      })
    : ApiError.field('path', 'encoding', 'The path is not valid percent-encoding');
  void reply
    .code(tooLong ? 414 : 400)
    .header('x-request-id', request.id)
    .header('cache-control', 'no-store')
    .header('content-type', 'application/json; charset=utf-8')
    .send(errorBody(refusal, request.id));
}

/** The header whose value holds a NUL byte, which Node's parser refuses before any hook runs; undefined if none. */
function headerWithNul(error: NodeJS.ErrnoException): string | undefined {
  const raw = (error as NodeJS.ErrnoException & { rawPacket?: Buffer }).rawPacket;
  if (raw === undefined || !raw.includes(0)) return undefined;
  const line = raw
    .toString('latin1')
    .split('\r\n')
    .find((candidate) => candidate.includes('\u0000') && candidate.includes(':'));
  const name = line?.slice(0, line.indexOf(':')).trim().toLowerCase();
  return name === undefined || name === '' || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name) ? 'headers' : name;
}

/** Node's HTTP parser's: headers over the limit (431), a request not sent in time (408), anything malformed (400). */
function clientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset connection has nobody left to answer; one whose request was refused before its body
  // was read has had its answer, and what the client sent after it is no request of its own.
  if (error.code === 'ECONNRESET' || socket.destroyed || answeredBeforeBody.has(socket)) {
    socket.destroy(error);
    return;
  }
  const nulHeader = headerWithNul(error);
  const [status, refusal] =
    nulHeader !== undefined
      ? [400, nulRefusal(nulHeader)]
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [
            431,
            new ApiError('HEADERS_TOO_LARGE', 'The request headers are larger than the server accepts', {
              field: 'headers',
            }),
          ]
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, ApiError.field('request', 'timeout', 'The request was not received in time')]
          : [400, ApiError.field('request', 'syntax', 'The request is not valid HTTP/1.1')];
  const id = randomUUID();
  const body = errorBody(refusal, id);
  // As Node's own handler: never write into a response already under way (a pipelined request).
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && inFlight?.headersSent !== true) {
    socket.write(
      [
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
        'Content-Type: application/json; charset=utf-8',
        `Content-Length: ${Buffer.byteLength(body)}`,
        `X-Request-Id: ${id}`,
        'Cache-Control: no-store',
        'Connection: close',
        '',
        body,
      ].join('\r\n'),
    );
  }
  socket.destroy(error);
}

/**
 * Everything the contract says about HTTP that is not a route: headers on every response,
 * JSON-only bodies, the request context, and one log line per request.
 */
export function configureHttp(app: NestFastifyApplication, log: Pino, options: HttpOptions = {}): void {
  const { afterStatus, authenticate, corsOrigins = [] } = options;
  const fastify: FastifyInstance = app.getHttpAdapter().getInstance();

  // Every body is at most 1 MiB (the server's limit), but the bulk routes' (part 6.6). The parser
  // sets no limit of its own, so Fastify applies the route's while the body streams in.
  fastify.addHook('onRoute', (route) => {
    if (route.method === 'POST' && /\/(bulk-grant|bulk-revoke|bulk-delete)$/.test(route.url))
      route.bodyLimit = BULK_BODY_LIMIT_BYTES;
  });
  fastify.removeAllContentTypeParsers();
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.addContentTypeParser([...JSON_MEDIA_TYPES], { parseAs: 'buffer' }, (request, body, done) => {
    // A protocol's own JSON media type (application/scim+json) is taken only by that protocol's routes.
    if (!acceptsMediaType(request)) {
      done(ApiError.unsupportedMediaType(), undefined);
      return;
    }
    // Bytes that are not UTF-8 would be decoded to U+FFFD and stored changed (part 1).
    let text: string;
    try {
      text = STRICT_UTF8.decode(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
    } catch {
      done(ApiError.field('body', 'utf8', 'The body is not valid UTF-8'), undefined);
      return;
    }
    // An action called with Content-Type: application/json and no body means "no options".
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    void parseJson(request, text, (error, value) => {
      if (error === null && nestedDeeperThan(value, MAX_JSON_DEPTH)) {
        done(ApiError.field('body', 'depth', `JSON nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
        return;
      }
      // JSON may escape a lone surrogate ("\ud800"), which is no UTF-8: PostgreSQL would store it
      // as U+FFFD, silently changing what the client sent (part 1).
      const illFormed = error === null ? illFormedStringAt(value) : undefined;
      if (illFormed !== undefined) {
        done(ApiError.field(illFormed, 'utf8', 'The string holds a lone surrogate: it is not UTF-8'), undefined);
        return;
      }
      const nul = error === null ? nulStringAt(value) : undefined;
      if (nul !== undefined) {
        done(nulRefusal(nul), undefined);
        return;
      }
      done(error, value);
    });
  });

  // A client that asks before sending its body (`Expect: 100-continue`, curl past 1 MiB) is told to
  // go on only once it has authenticated: Node would otherwise say so before any hook runs.
  fastify.server.on('checkContinue', (raw: IncomingMessage, response: ServerResponse) =>
    fastify.server.emit('request', raw, response),
  );
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id).header('cache-control', 'no-store');
    done();
  });
  // Before authentication: a preflight carries no token, and a refusal must still be readable.
  allowOrigins(fastify, corsOrigins);
  // Authentication before the body (part 4): a refusal here is sent before any byte of the body
  // is read or parsed (Node discards what the client still sends).
  if (authenticate !== undefined) {
    const logger = new Logger('Errors');
    fastify.addHook('onRequest', async (request, reply) => {
      let answer: StoredAnswer | undefined;
      // The request's context from here on: its cache work starts with authentication.
      const context = requestContextOf(request);
      try {
        answer = await runInRequestContext(context, () => authenticate(request));
      } catch (error) {
        // Until its body has been received (and discarded), a parser error on the connection is
        // about that body, not a request of its own.
        if (hasBody(request) && !request.raw.complete) {
          const socket = request.raw.socket;
          answeredBeforeBody.add(socket);
          request.raw.once('end', () => answeredBeforeBody.delete(socket));
        }
        // The rest of a body up to the drain limit is read and discarded after the answer (the
        // client then reads it); a longer or unannounced one is not, the connection closes.
        if (hasBody(request) && !(announcedLength(request) <= DRAIN_LIMIT_BYTES))
          void reply.header('connection', 'close');
        sendError(error, request, reply, logger);
        return reply;
      }
      if (answer !== undefined) {
        context.actor_id = answer.actorId;
        if (answer.version !== undefined) void reply.header('etag', `"${answer.version}"`);
        void reply.header('content-type', 'application/json; charset=utf-8');
        return reply.send(answer.body);
      }
      if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue();
      return undefined;
    });
  }
  // A NUL in a query parameter or a path segment (`%00`) is refused like one in a body (part 1).
  fastify.addHook('preValidation', (request, _reply, done) => {
    const at = nulStringAt(request.query) ?? nulStringAt(request.params);
    done(at === undefined || at === 'body' ? undefined : nulRefusal(at));
  });
  // After body parsing, so the context survives into guards, pipes and handlers.
  fastify.addHook('preHandler', (request, _reply, done) => {
    runInRequestContext(requestContextOf(request), done);
  });
  // One onSend hook for every request; `afterStatus` returns a promise only when it has work.
  fastify.addHook('onSend', (request, reply, payload, done) => {
    keepReadingRefusedBody(request, reply);
    const sent = applyStatusOverride(request, reply, payload);
    const pending = afterStatus?.(request, reply, sent);
    if (pending === undefined) done(null, sent);
    else pending.then((final) => done(null, final), done);
  });
  // A hook that formats nothing still costs every request: only registered when the line is logged.
  if (!log.isLevelEnabled('info')) return;
  fastify.addHook('onResponse', (request, reply, done) => {
    log.info(
      {
        request_id: request.id,
        actor_id: contexts.get(request)?.actor_id ?? null,
        method: request.method,
        route: request.routeOptions.url ?? null,
        status: reply.statusCode,
        duration_ms: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request',
    );
    done();
  });
}

export interface HttpOptions {
  /** Work on the final payload (the idempotent response store). */
  readonly afterStatus?: BeforeSend;
  /** Authentication before the body (part 4). */
  readonly authenticate?: Authenticate;
  /** CORS_ORIGINS (part 1). */
  readonly corsOrigins?: readonly string[];
}

/**
 * Authenticates a request before its body is read; throws the refusal. May answer the request
 * itself (a cached detail sent as stored): then the route's handler does not run.
 */
export type Authenticate = (request: FastifyRequest) => Promise<StoredAnswer | undefined>;

/** A 200 the authentication hook answers by itself: the envelope, its ETag version (a detail's), the actor. */
export interface StoredAnswer {
  readonly body: string;
  readonly version?: number;
  readonly actorId: number;
}

/** Work on the final payload before it is written; a promise only when there is any. */
export type BeforeSend = (
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
) => Promise<unknown> | undefined;

// The auth guard records the actor in the request context; the log line reads it back from here.
const contexts = new WeakMap<object, RequestContext>();

/** The request's one context (made on first use), so that its cache time adds up across hooks. */
function requestContextOf(request: FastifyRequest): RequestContext {
  let context = contexts.get(request);
  if (context === undefined) {
    context = { request_id: request.id, ip: request.ip, actor_id: null, cache: { spentMs: 0 } };
    contexts.set(request, context);
  }
  return context;
}

/** No route takes more than a few levels; deeper input only serves to exhaust a recursive walker. */
const MAX_JSON_DEPTH = 32;

/** The most of a refused body the server still reads (and discards) so that its answer arrives. */
const DRAIN_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * A body refused by its size before it was read (413) makes Fastify close the connection
 * after the answer; the client is often still sending, and closing a socket with unread bytes
 * resets it, so the client may lose the 413 it was sent. When the body's announced length is
 * bounded, keep the connection instead: Node reads the rest and discards it, then the client
 * reads the answer. An unbounded or huge body is still cut off.
 */
function keepReadingRefusedBody(request: FastifyRequest, reply: FastifyReply): void {
  // Only a refusal by size: a body that failed to parse may have been cut short by the client,
  // and the connection is then of no further use.
  if (reply.statusCode !== 413 || request.raw.complete || reply.getHeader('connection') !== 'close') return;
  if (announcedLength(request) <= DRAIN_LIMIT_BYTES) reply.removeHeader('connection');
}

/** The body's announced length; NaN when there is none (chunked, or no body). */
function announcedLength(request: FastifyRequest): number {
  const announced = Number(request.headers['content-length']);
  return Number.isInteger(announced) ? announced : Number.NaN;
}

function hasBody(request: FastifyRequest): boolean {
  return request.headers['transfer-encoding'] !== undefined || announcedLength(request) > 0;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The body media types parsed as JSON: JSON, and SCIM's (RFC 7644 §3.1) on the routes that speak it. */
const JSON_MEDIA_TYPES = ['application/json', 'application/scim+json'] as const;

function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function acceptsMediaType(request: FastifyRequest): boolean {
  const sent = mediaTypeOf(request.headers['content-type']);
  return sent === 'application/json' || sent === mediaTypeOf(errorDialectOf(request)?.contentType);
}

/** Where the first string (a value or a key) that is not well-formed UTF-16 sits, as `a.b.0`; undefined if none. */
export function illFormedStringAt(value: unknown): string | undefined {
  return stringAt(value, (text) => !text.isWellFormed());
}

/** Where the first string (a value or a key) holding a NUL character sits, as `a.b.0`; undefined if none. */
export function nulStringAt(value: unknown): string | undefined {
  return stringAt(value, (text) => text.includes('\u0000'));
}

/** Where the first string (a value or a key) for which `bad` holds sits; iterative, as a hostile body may be deep. */
function stringAt(value: unknown, bad: (text: string) => boolean): string | undefined {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length > 0) {
    const [item, path] = stack.pop() as [unknown, string];
    if (typeof item === 'string') {
      if (bad(item)) return path === '' ? 'body' : path;
      continue;
    }
    if (item === null || typeof item !== 'object') continue;
    for (const [key, child] of Object.entries(item)) {
      const at = path === '' ? key : `${path}.${key}`;
      if (bad(key)) return path === '' ? 'body' : path;
      stack.push([child, at]);
    }
  }
  return undefined;
}

/** The refusal of a NUL character (part 1): PostgreSQL cannot store one in text, and none is dropped silently. */
export function nulRefusal(field: string): ApiError {
  return ApiError.field(field, 'nul', `${field} holds a NUL character (\\u0000), which cannot be stored`);
}

/** Iterative, so a hostile body cannot overflow the stack while being measured. */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (item === null || typeof item !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}
