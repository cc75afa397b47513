import { HttpException } from '@nestjs/common';
import { ApiError } from './api-error.js';

// PostgreSQL SQLSTATEs and socket errors that mean "the database is not reachable right now".
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '57014',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);
const UNAVAILABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const UNAVAILABLE_MESSAGES = [
  /Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /Client has encountered a connection error/i,
  /Connection is not established/i,
  /connection is closed/i,
];

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

/** True for errors of a lost or refused PostgreSQL connection (also wrapped by TypeORM). */
export function isDatabaseUnavailable(error: unknown): boolean {
  // Duck-typed rather than `instanceof Error`: socket errors may come from another realm.
  for (const candidate of [error, field(error, 'driverError'), field(error, 'cause')]) {
    const code = field(candidate, 'code');
    const message = field(candidate, 'message');
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code)))
      return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
  }
  return false;
}

/** True for PostgreSQL's unique violation (23505) on the named constraint or unique index. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const driver = field(error, 'driverError') ?? error;
  return field(driver, 'code') === '23505' && field(driver, 'constraint') === constraint;
}

/*
 * Fastify's own error codes (thrown while reading a body, before any route runs) and the
 * contract code each becomes. These names are only matched here, never sent to a client.
 */
const FROM_FASTIFY: Readonly<Record<string, () => ApiError>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ApiError.payloadTooLarge,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ApiError.unsupportedMediaType,
  FST_ERR_CTP_INVALID_TYPE: ApiError.unsupportedMediaType,
  FST_ERR_CTP_EMPTY_JSON_BODY: ApiError.malformedJson,
  FST_ERR_CTP_INVALID_JSON_BODY: ApiError.malformedJson,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ApiError.malformedJson,
};

/** The contract error for a body-parsing failure, or undefined if `error` is not one. */
function fastifyError(error: unknown): ApiError | undefined {
  const code = field(error, 'code');
  const known = typeof code === 'string' && Object.hasOwn(FROM_FASTIFY, code) ? FROM_FASTIFY[code] : undefined;
  if (known !== undefined) return known();
  // JSON.parse's SyntaxError, tagged 400 by the parser (duck-typed: it may come from another realm).
  if (field(error, 'statusCode') === 400 && field(error, 'name') === 'SyntaxError') return ApiError.malformedJson();
  return undefined;
}

function fromHttpException(exception: HttpException): ApiError {
  const status = exception.getStatus();
  switch (status) {
    case 400:
      return ApiError.field('body', 'invalid', exception.message);
    case 404:
      return new ApiError(
        'ROUTE_NOT_FOUND',
        exception.message.startsWith('Cannot ') ? `No route ${exception.message.slice(7)}` : 'No such route',
      );
    case 413:
      return ApiError.payloadTooLarge();
    case 415:
      return ApiError.unsupportedMediaType();
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
  // A value PostgreSQL could not take (SQLSTATE class 22: out of range, wrong form) is the
  // client's input slipping past a validator: still a 400, but logged as the bug it is.
  const sqlState = field(field(error, 'driverError') ?? error, 'code');
  if (typeof sqlState === 'string' && sqlState.startsWith('22')) {
    return {
      error: ApiError.field('body', 'range', 'A value is out of range or not of the expected form'),
      internal: true,
    };
  }
  const fromParser = fastifyError(error);
  if (fromParser !== undefined) return { error: fromParser, internal: false };
  return { error: new ApiError('INTERNAL_ERROR', 'An unexpected error occurred'), internal: true };
}

/** The error envelope of part 1. */
export function errorBody(error: ApiError, requestId: string): string {
  return JSON.stringify({
    success: false,
    error: { code: error.code, message: error.message, details: error.details },
    meta: { request_id: requestId },
  });
}
