import { ApiError } from '../../src/platform/http/api-error.js';
import { codesOf, ERROR_CODES, ERRORS, statusOf } from '../../src/platform/http/error-codes.js';

describe('the one error table (part 1)', () => {
  it('derives the statuses, and lists each status’s codes in catalogue order', () => {
    expect(statusOf('DELEGATION_FORBIDDEN')).toBe(403);
    expect(codesOf(401)).toEqual([
      'AUTH_TOKEN_MISSING',
      'AUTH_TOKEN_INVALID',
      'AUTH_TOKEN_EXPIRED',
      'AUTH_SESSION_INVALID',
    ]);
    expect(codesOf(503)).toEqual(['SERVICE_UNAVAILABLE']);
    for (const code of ERROR_CODES) expect(code.endsWith('_NOT_FOUND')).toBe(ERRORS[code].status === 404);
  });

  it('builds every record 404 from the table: message and details key', () => {
    expect(ApiError.notFound('USER_NOT_FOUND', 42)).toMatchObject({
      status: 404,
      code: 'USER_NOT_FOUND',
      message: 'User 42 does not exist',
      details: { user_id: 42 },
    });
    expect(ApiError.notFound('AUTHORITY_PERMISSION_NOT_FOUND', 7)).toMatchObject({
      message: 'Authority permission 7 does not exist',
      details: { authority_permission_id: 7 },
    });
    expect(ApiError.notFound('SESSION_NOT_FOUND', 'abc')).toMatchObject({ details: { session_id: 'abc' } });
  });
});
