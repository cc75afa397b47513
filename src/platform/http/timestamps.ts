import { ApiError } from './api-error.js';
import { isIsoTimestamp } from './list/list-query.parser.js';

/**
 * A future instant, or a 400 naming the field: an expiry that has already passed is useless, and
 * an ISO-8601 form that JavaScript and PostgreSQL do not both read (a week date, the basic
 * format) is refused here rather than reaching the database.
 */
export function futureTimestamp(value: string, field: string): Date {
  const at = new Date(value);
  if (!isIsoTimestamp(value) || Number.isNaN(at.getTime()))
    throw ApiError.field(
      field,
      'timestamp',
      `${field} must be an ISO-8601 timestamp with an offset, such as 2026-11-24T14:00:00Z`,
    );
  if (at.getTime() <= Date.now()) throw ApiError.field(field, 'future', `${field} must be in the future`);
  return at;
}
