import { statusOf, type ErrorCode } from './error-codes.js';

export interface FieldProblem {
  readonly field: string;
  readonly rule: string;
  readonly message: string;
}

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

  static validation(fields: readonly FieldProblem[]): ApiError {
    const first = fields[0];
    const message = first === undefined ? 'The request is invalid' : fields.length === 1 ? first.message : `${first.message} (and ${fields.length - 1} more)`;
    return new ApiError('VALIDATION_FAILED', message, { fields });
  }

  static field(field: string, rule: string, message: string): ApiError {
    return ApiError.validation([{ field, rule, message }]);
  }

  static preconditionFailed(currentVersion: number): ApiError {
    return new ApiError('PRECONDITION_FAILED', 'If-Match does not match the current version', { current_etag: `"${currentVersion}"` });
  }

  static unavailable(): ApiError {
    return new ApiError('SERVICE_UNAVAILABLE', 'The database is unreachable; retry shortly', {}, { 'Retry-After': '1' });
  }
}
