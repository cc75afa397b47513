import { ApiError } from './api-error.js';

/** A future instant, or a 400 naming the field (an expiry that has already passed is useless). */
export function futureTimestamp(value: string, field: string): Date {
  const at = new Date(value);
  if (at.getTime() <= Date.now()) throw ApiError.field(field, 'future', `${field} must be in the future`);
  return at;
}
