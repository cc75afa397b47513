import { ApiError } from './api-error.js';

/** 404 for a user addressed by path or referenced from a body; shared by every module that names users. */
export function userNotFound(id: number): ApiError {
  return new ApiError('USER_NOT_FOUND', `User ${id} does not exist`, { user_id: id });
}

export function permissionNotFound(id: number): ApiError {
  return new ApiError('PERMISSION_NOT_FOUND', `Permission ${id} does not exist`, { permission_id: id });
}

export function authorityNotFound(id: number): ApiError {
  return new ApiError('AUTHORITY_NOT_FOUND', `Authority ${id} does not exist`, { authority_id: id });
}
