import { ApiError } from '../platform/http/api-error.js';
import { statusCode, USER_STATUS, type UserStatusCode } from '../platform/auth/roles.js';
import { capitalised, pastParticiple, withArticle } from '../platform/http/article.js';

export type UserAction = 'activate' | 'suspend' | 'reset_pin';

/** From which statuses each lifecycle action may start (part 6.1); any other start is a 409. */
const ALLOWED_FROM: Readonly<Record<UserAction, readonly UserStatusCode[]>> = {
  activate: ['pending', 'suspended'],
  suspend: ['pending', 'active'],
  reset_pin: ['pending', 'active'],
};

/** Where the action leaves the user (reset-pin keeps the status). */
export const TARGET_STATUS: Readonly<Record<'activate' | 'suspend', number>> = {
  activate: USER_STATUS.active,
  suspend: USER_STATUS.suspended,
};

export function assertTransition(statusId: number, action: UserAction): void {
  const from = statusCode(statusId);
  if (from !== undefined && ALLOWED_FROM[action].includes(from)) return;
  throw new ApiError(
    'INVALID_STATE_TRANSITION',
    `${capitalised(withArticle(from ?? 'unknown'))} user cannot be ${action === 'reset_pin' ? 'given a new PIN' : pastParticiple(action)}`,
    {
      from: from ?? statusId,
      action: action === 'reset_pin' ? 'reset-pin' : action,
    },
  );
}
