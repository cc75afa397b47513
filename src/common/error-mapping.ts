import { HttpException } from '@nestjs/common';
import { ApiError } from './api-error.js';

// PostgreSQL SQLSTATEs and socket errors that mean "the database is not reachable right now".
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '08000', '08001', '08003', '08004', '08006']);
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGES = [/Connection terminated/i, /timeout exceeded when trying to connect/i, /Client has encountered a connection error/i, /Connection is not established/i, /connection is closed/i];

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

/** True for errors of a lost or refused PostgreSQL connection (also wrapped by TypeORM). */
export function isDatabaseUnavailable(error: unknown): boolean {
  // Duck-typed rather than `instanceof Error`: socket errors may come from another realm.
  for (const candidate of [error, field(error, 'driverError'), field(error, 'cause')]) {
    const code = field(candidate, 'code');
    const message = field(candidate, 'message');
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code))) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
  }
  return false;
}

function fromFastify(code: string, statusCode: number, error: Error): ApiError | undefined {
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('PAYLOAD_TOO_LARGE', 'The request body exceeds 1 MiB', { limit_bytes: 1_048_576 });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be application/json', { expected: 'application/json' });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('MALFORMED_JSON', 'The request body is not valid JSON');
    default:
      if (statusCode === 400 && error instanceof SyntaxError) return new ApiError('MALFORMED_JSON', 'The request body is not valid JSON');
      return undefined;
  }
}

function fastifyError(error: unknown): ApiError | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = field(error, 'code');
  const statusCode = field(error, 'statusCode');
  if (typeof code === 'string' && typeof statusCode === 'number') return fromFastify(code, statusCode, error);
  if (statusCode === 400 && error instanceof SyntaxError) return new ApiError('MALFORMED_JSON', 'The request body is not valid JSON');
  return undefined;
}

function fromHttpException(exception: HttpException): ApiError {
  const status = exception.getStatus();
  switch (status) {
    case 400:
      return ApiError.field('body', 'invalid', exception.message);
    case 404:
      return new ApiError('ROUTE_NOT_FOUND', exception.message.startsWith('Cannot ') ? `No route ${exception.message.slice(7)}` : 'No such route');
    case 413:
      return new ApiError('PAYLOAD_TOO_LARGE', 'The request body exceeds 1 MiB', { limit_bytes: 1_048_576 });
    case 415:
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be application/json', { expected: 'application/json' });
    case 429:
      return new ApiError('RATE_LIMITED', 'Too many requests', {}, { 'Retry-After': '60' });
    case 503:
      return ApiError.unavailable();
    default:
      return new ApiError('INTERNAL_ERROR', 'An unexpected error occurred');
  }
}

/**
 * Maps anything thrown to the contract's error. Returns `internal: true` when the cause is a
 * bug to be logged with its stack; the client never sees more than the code and message.
 */
export function toApiError(error: unknown): { error: ApiError; internal: boolean } {
  if (error instanceof ApiError) return { error, internal: false };
  if (error instanceof HttpException) {
    // Nest wraps Fastify's own errors (body parsing, limits) and keeps the original as the cause.
    const fastifyCause = fastifyError(error.cause);
    if (fastifyCause !== undefined) return { error: fastifyCause, internal: false };
    const mapped = fromHttpException(error);
    return { error: mapped, internal: mapped.code === 'INTERNAL_ERROR' };
  }
  if (isDatabaseUnavailable(error)) return { error: ApiError.unavailable(), internal: false };
  const fromParser = fastifyError(error);
  if (fromParser !== undefined) return { error: fromParser, internal: false };
  return { error: new ApiError('INTERNAL_ERROR', 'An unexpected error occurred'), internal: true };
}

/** The error envelope of part 1. */
export function errorBody(error: ApiError, requestId: string): string {
  return JSON.stringify({ success: false, error: { code: error.code, message: error.message, details: error.details }, meta: { request_id: requestId } });
}
