/**
 * The contract's complete error catalogue (part 1), written once: each code's status, what it
 * means, an example of its `details`, and for "not found" codes the record's noun and the
 * `details` key of its id. The union type, the status mapping, the OpenAPI error examples and
 * the not-found factory are all derived from this table.
 */
interface ErrorSpec {
  readonly status: 400 | 401 | 403 | 404 | 409 | 410 | 412 | 413 | 414 | 415 | 422 | 429 | 431 | 500 | 503;
  readonly meaning: string;
  readonly example?: Readonly<Record<string, unknown>>;
  /** For `*_NOT_FOUND` of a record addressed by id: "User 42 does not exist", `{ user_id: 42 }`. */
  readonly record?: { readonly noun: string; readonly key: string };
}

const notFound = (
  noun: string,
  key: string,
): ErrorSpec & { readonly record: { readonly noun: string; readonly key: string } } => ({
  status: 404,
  meaning: `The ${noun.toLowerCase()} does not exist (also when referenced from a body)`,
  example: { [key]: 42 },
  record: { noun, key },
});

export const ERRORS = {
  VALIDATION_FAILED: {
    status: 400,
    meaning: 'A bad body, query or path value, or an unknown parameter or property',
    example: { fields: [{ field: 'page_size', rule: 'max', message: 'page_size must not be greater than 100' }] },
  },
  MALFORMED_JSON: { status: 400, meaning: 'The body is not valid JSON' },
  AUTH_TOKEN_MISSING: { status: 401, meaning: 'No bearer token in the Authorization header' },
  AUTH_TOKEN_INVALID: {
    status: 401,
    meaning: 'Bad signature, algorithm, issuer or audience, or a missing claim',
    example: { reason: 'invalid signature' },
  },
  AUTH_TOKEN_EXPIRED: { status: 401, meaning: 'The token has expired' },
  AUTH_SESSION_INVALID: {
    status: 401,
    meaning: 'Unknown, revoked or expired session; user deleted or not active',
    example: { reason: 'session_revoked' },
  },
  ROLE_FORBIDDEN: { status: 403, meaning: 'The role has no admin access', example: { role_id: 5 } },
  PERMISSION_DENIED: {
    status: 403,
    meaning: 'The caller lacks the route’s permission',
    example: { permission: 'authorities.revoke', device_id: 7 },
  },
  ROLE_ESCALATION_FORBIDDEN: {
    status: 403,
    meaning: 'The caller does not outrank the target user or role',
    example: { target_role_id: 2 },
  },
  DELEGATION_FORBIDDEN: {
    status: 403,
    meaning: 'The caller may not hand on a permission it does not itself hold',
    example: { permission: 'devices.transfer_owner', device_id: 7 },
  },
  ROUTE_NOT_FOUND: { status: 404, meaning: 'No such route', example: { method: 'GET', path: '/v1/admin/nope' } },
  USER_NOT_FOUND: notFound('User', 'user_id'),
  DEVICE_NOT_FOUND: notFound('Device', 'device_id'),
  AUTHORITY_NOT_FOUND: notFound('Authority', 'authority_id'),
  PERMISSION_NOT_FOUND: notFound('Permission', 'permission_id'),
  PERMISSION_GRANT_NOT_FOUND: notFound('Permission grant', 'grant_id'),
  AUTHORITY_PERMISSION_NOT_FOUND: notFound('Authority permission', 'authority_permission_id'),
  MESSAGE_NOT_FOUND: notFound('Message', 'message_id'),
  READ_STATE_NOT_FOUND: notFound('Read state', 'read_state_id'),
  MOBILE_DEVICE_NOT_FOUND: notFound('Mobile device', 'mobile_device_id'),
  JOB_NOT_FOUND: notFound('Job', 'job_id'),
  ROLE_NOT_FOUND: notFound('Role', 'role_id'),
  STATUS_NOT_FOUND: notFound('Status', 'status_id'),
  AUDIT_EVENT_NOT_FOUND: notFound('Audit event', 'audit_event_id'),
  SESSION_NOT_FOUND: notFound('Session', 'session_id'),
  WEBHOOK_ENDPOINT_NOT_FOUND: notFound('Webhook endpoint', 'webhook_endpoint_id'),
  WEBHOOK_DELIVERY_NOT_FOUND: notFound('Webhook delivery', 'webhook_delivery_id'),
  ACCESS_REQUEST_NOT_FOUND: notFound('Access request', 'access_request_id'),
  ACCESS_REVIEW_NOT_FOUND: notFound('Access review', 'access_review_id'),
  ACCESS_REVIEW_ITEM_NOT_FOUND: notFound('Access review item', 'item_id'),
  GROUP_NOT_FOUND: notFound('Group', 'group_id'),
  AUTHORITY_ALREADY_EXISTS: {
    status: 409,
    meaning: 'The user already has an authority on the device (deleted or not)',
    example: { authority_id: 42, device_id: 7, user_id: 3, is_deleted: false },
  },
  USER_EMAIL_TAKEN: {
    status: 409,
    meaning: 'The email belongs to another user',
    example: { email: 'ana@example.com' },
  },
  DEVICE_SERIAL_TAKEN: {
    status: 409,
    meaning: 'The serial number belongs to another device',
    example: { serial_number: 'SN-1' },
  },
  MOBILE_DEVICE_TOKEN_TAKEN: { status: 409, meaning: 'The push token is already registered' },
  GROUP_NAME_TAKEN: {
    status: 409,
    meaning: 'The name belongs to another group (live or deleted), compared case-insensitively',
    example: { name: 'Auditors' },
  },
  USER_NAME_TAKEN: {
    status: 409,
    meaning: 'The user name belongs to another user, compared case-insensitively',
    example: { user_name: 'ana' },
  },
  EXTERNAL_ID_TAKEN: {
    status: 409,
    meaning: 'The external id belongs to another user or group',
    example: { external_id: '00u1abcd', resource_type: 'group' },
  },
  PERMISSION_ALREADY_GRANTED: {
    status: 409,
    meaning: 'An active grant of the pair exists',
    example: { grant_id: 9, user_id: 3, permission_id: 1 },
  },
  AUTHORITY_PERMISSION_EXISTS: {
    status: 409,
    meaning: 'The authority already holds the permission',
    example: { authority_permission_id: 5, authority_id: 42, permission_id: 13 },
  },
  INVALID_STATE_TRANSITION: {
    status: 409,
    meaning: 'The action is not allowed from the current state',
    example: { from: 'revoked', action: 'activate' },
  },
  IDEMPOTENCY_KEY_IN_PROGRESS: { status: 409, meaning: 'The first request with this key is still running' },
  EVENT_CURSOR_EXPIRED: {
    status: 410,
    meaning:
      'The cursor points before events that retention (EVENT_RETENTION_DAYS) has purged; resume from `oldest_after`, from which reading is whole again',
    example: { oldest_after: '00000000000000000812-00000000000000000041' },
  },
  PRECONDITION_FAILED: {
    status: 412,
    meaning: 'If-Match does not match the current version',
    example: { current_etag: '"3"' },
  },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'The body is larger than 1 MiB', example: { limit_bytes: 1_048_576 } },
  URI_TOO_LONG: {
    status: 414,
    meaning: 'A path segment is longer than the server accepts',
    example: { field: 'path', max_length: 200 },
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    meaning: 'The body is not application/json',
    example: { expected: 'application/json' },
  },
  OWNER_AUTHORITY_PROTECTED: {
    status: 422,
    meaning: 'The owner’s authority cannot be deleted, deactivated, revoked or given an expiry',
    example: { authority_id: 42, device_id: 7, action: 'revoke' },
  },
  TRANSFER_TARGET_INVALID: {
    status: 422,
    meaning: 'The new owner is deleted, not active, or already the owner',
    example: { new_owner_user_id: 3, reason: 'user_not_active' },
  },
  SELF_ACTION_FORBIDDEN: {
    status: 422,
    meaning: 'Nobody may do this to themselves',
    example: { action: 'suspend', user_id: 3 },
  },
  PERMISSION_NOT_DEVICE_SCOPED: {
    status: 422,
    meaning: 'Only device-scoped permissions attach to authorities',
    example: { permission_id: 1, permission_code: 'users.read' },
  },
  SNOOZE_UNTIL_INVALID: { status: 422, meaning: 'until must be in the future and at most 365 days ahead' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, meaning: 'The key was used with a different body' },
  WEBHOOK_URL_FORBIDDEN: {
    status: 422,
    meaning:
      'The webhook URL is not https, or its host is (or resolves to) a loopback, private or otherwise non-public address',
    example: { reason: 'private_address', host: '10.0.0.7', address: '10.0.0.7' },
  },
  HISTORY_NOT_AVAILABLE: {
    status: 422,
    meaning: 'A point-in-time question about a moment before the access history begins',
    example: { at: '2026-01-01T00:00:00.000Z', history_starts_at: '2026-11-24T00:00:00.000Z' },
  },
  ACCESS_REQUEST_INVALID: {
    status: 422,
    meaning:
      'The access cannot be asked for or granted: the permission is not device-scoped, the requester holds no live authority on the device, is already allowed it there, or is not active',
    example: { reason: 'already_allowed', device_id: 7, permission_code: 'authorities.revoke' },
  },
  ACCESS_REVIEW_ITEM_NOT_REVOCABLE: {
    status: 422,
    meaning: 'An owner’s or a role’s access cannot be decided `revoke` in an access review',
    example: { item_id: 12, decided_by: 'device_owner' },
  },
  GROUP_NESTING_INVALID: {
    status: 422,
    meaning: 'The group would contain itself (`cycle`) or nest more than 5 levels deep (`depth`)',
    example: { reason: 'cycle', group_id: 4, member_group_id: 9 },
  },
  RATE_LIMITED: { status: 429, meaning: 'Too many requests; see Retry-After' },
  HEADERS_TOO_LARGE: {
    status: 431,
    meaning: 'The request headers are larger than the server accepts',
    example: { field: 'headers' },
  },
  INTERNAL_ERROR: { status: 500, meaning: 'A bug; the request id finds it in the logs' },
  SERVICE_UNAVAILABLE: {
    status: 503,
    meaning: 'A dependency is unreachable or refused the work; see Retry-After',
    example: { dependency: 'database' },
  },
} as const satisfies Readonly<Record<string, ErrorSpec>>;

export type ErrorCode = keyof typeof ERRORS;

/** Every code, in catalogue order (the OpenAPI document, tests). */
export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

export function statusOf(code: ErrorCode): number {
  return ERRORS[code].status;
}

/** The codes of one status, in catalogue order. */
export function codesOf(status: number): ErrorCode[] {
  return ERROR_CODES.filter((code) => ERRORS[code].status === status);
}

/** The codes of a record addressed by id, which `notFound` can build. */
export type RecordNotFoundCode = {
  [Code in ErrorCode]: (typeof ERRORS)[Code] extends { readonly record: object } ? Code : never;
}[ErrorCode];
