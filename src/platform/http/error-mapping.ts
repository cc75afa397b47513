import { HttpException } from '@nestjs/common';
import { ApiError } from './api-error.js';

// PostgreSQL SQLSTATEs that mean "the database cannot take the work right now": the whole classes
// 08 (connection exception) and 53 (insufficient resources, e.g. 53300 too many connections), and
// 55000 (a database not accepting connections), 3D000 (the database is gone), 28000/28P01 (the
// login is refused), 57P01-57P03 (shutdown, crash, not yet accepting), 57014 (statement timeout).
const UNAVAILABLE_SQLSTATE_CLASSES = ['08', '53'];
const UNAVAILABLE_SQLSTATES = new Set(['55000', '3D000', '28000', '28P01', '57P01', '57P02', '57P03', '57014']);
/** A deadlock (40P01) or serialization failure (40001): the transaction may succeed if run again. */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);
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
  /Connection terminated due to connection timeout/i,
  /Client has encountered a connection error/i,
  /Connection is not established/i,
  /connection is closed/i,
];

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

function isUnavailableCode(code: string): boolean {
  return (
    UNAVAILABLE_SQLSTATES.has(code) ||
    UNAVAILABLE_SOCKET_CODES.has(code) ||
    (/^[0-9A-Z]{5}$/.test(code) && UNAVAILABLE_SQLSTATE_CLASSES.includes(code.slice(0, 2)))
  );
}

/** The SQLSTATE of a driver error, also when wrapped by TypeORM. */
export function sqlStateOf(error: unknown): string | undefined {
  const code = field(field(error, 'driverError') ?? error, 'code');
  return typeof code === 'string' ? code : undefined;
}

/** True for a deadlock or serialization failure: the unit of work runs the transaction again. */
export function isRetryableConflict(error: unknown): boolean {
  const code = sqlStateOf(error);
  return code !== undefined && RETRYABLE_SQLSTATES.has(code);
}

// TypeORM's errors for a transaction whose connection died under it (terminated backend, reset
// socket): the statements that follow, the COMMIT included, fail with these instead of the cause.
const RELEASED_CONNECTION_ERRORS = new Set([
  'QueryRunnerAlreadyReleasedError',
  'QueryRunnerProviderAlreadyReleasedError',
]);

/** True for errors of a lost or refused PostgreSQL connection (also wrapped by TypeORM). */
export function isDatabaseUnavailable(error: unknown): boolean {
  const name = field(error, 'name');
  if (typeof name === 'string' && RELEASED_CONNECTION_ERRORS.has(name)) return true;
  // Duck-typed rather than `instanceof Error`: socket errors may come from another realm.
  for (const candidate of [error, field(error, 'driverError'), field(error, 'cause')]) {
    const code = field(candidate, 'code');
    const message = field(candidate, 'message');
    if (typeof code === 'string' && isUnavailableCode(code)) return true;
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
  // Outside a unit of work (which retries them) a conflict is still the database refusing the work.
  if (isRetryableConflict(error)) return { error: ApiError.unavailable('contention'), internal: false };
  // A value PostgreSQL could not take (SQLSTATE class 22: out of range, wrong form) is the
  // client's input slipping past a validator: still a 400, but logged as the bug it is.
  if (sqlStateOf(error)?.startsWith('22') === true) {
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
