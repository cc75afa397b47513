import { ERRORS, statusOf, type ErrorCode, type RecordNotFoundCode } from './error-codes.js';

/** The contract's request body limit (part 10). */
export const BODY_LIMIT_BYTES = 1_048_576;
/** The bulk routes' bodies: up to 100 000 items as a job (part 6.6) do not fit in 1 MiB. */
export const BULK_BODY_LIMIT_BYTES = 8 * 1_048_576;

export interface FieldProblem {
  readonly field: string;
  readonly rule: string;
  readonly message: string;
}

/** Why the database could not take a write (`details.reason` of a 503). */
const UNAVAILABLE_MESSAGES = {
  unreachable: 'The database is unreachable; retry shortly',
  contention: 'The database could not settle concurrent writes; retry shortly',
  busy: 'This instance is busy with other writes; retry shortly',
} as const;

/**
 * The one error type services throw. The exception filter turns it into the contract's error
 * envelope; `headers` carries e.g. `Retry-After`.
 */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = statusOf(code);
  }

  /** 404 for a record addressed by id (in the path or a body): "User 42 does not exist", `{ user_id: 42 }`. */
  static notFound(code: RecordNotFoundCode, id: number | string): ApiError {
    const { noun, key } = ERRORS[code].record;
    return new ApiError(code, `${noun} ${id} does not exist`, { [key]: id });
  }

  static validation(fields: readonly FieldProblem[]): ApiError {
    const first = fields[0];
    // The message names the first problem and which other fields have one; details list them all.
    const others = [...new Set(fields.map((problem) => problem.field))].filter((field) => field !== first?.field);
    const message =
      first === undefined
        ? 'The request is invalid'
        : others.length === 0
          ? first.message
          : `${first.message}; also ${others.length === 1 ? 'the field' : 'the fields'} ${others.slice(0, 5).join(', ')}${others.length > 5 ? ', …' : ''}`;
    return new ApiError('VALIDATION_FAILED', message, { fields });
  }

  static field(field: string, rule: string, message: string): ApiError {
    return ApiError.validation([{ field, rule, message }]);
  }

  static preconditionFailed(currentVersion: number): ApiError {
    return new ApiError('PRECONDITION_FAILED', 'If-Match does not match the current version', {
      current_etag: `"${currentVersion}"`,
    });
  }

  static payloadTooLarge(this: void, limitBytes = BODY_LIMIT_BYTES): ApiError {
    return new ApiError('PAYLOAD_TOO_LARGE', `The request body exceeds ${limitBytes / 1_048_576} MiB`, {
      limit_bytes: limitBytes,
    });
  }

  static unsupportedMediaType(this: void): ApiError {
    return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be application/json', {
      expected: 'application/json',
    });
  }

  static malformedJson(this: void): ApiError {
    return new ApiError('MALFORMED_JSON', 'The request body is not valid JSON');
  }

  /**
   * 503 for a dependency that is down or refused the work (part 1): `unreachable` (down, refusing
   * connections, out of connections), `contention` (a deadlock or serialization failure that
   * outlasted the retries) or `busy` (a write's turn did not come in time: `WriteTurns`).
   */
  static unavailable(reason: 'unreachable' | 'contention' | 'busy' = 'unreachable'): ApiError {
    return new ApiError(
      'SERVICE_UNAVAILABLE',
      UNAVAILABLE_MESSAGES[reason],
      { dependency: 'database', reason },
      { 'Retry-After': '1' },
    );
  }
}
