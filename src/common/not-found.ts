import { ApiError } from './api-error.js';

/** 404 for a user addressed by path or referenced from a body; shared by every module that names users. */
export function userNotFound(id: number): ApiError {
  return new ApiError('USER_NOT_FOUND', `User ${id} does not exist`, { user_id: id });
}
