import type { Notice } from '../inbox/messages.service.js';
import type { AccessRequestRow } from './access-requests.repository.js';

/** Inbox messages of access requests: `type: "access_request"`, `data: {access_request_id}` (part 6.15). */
export const NOTICE_TYPE = 'access_request';

/** To each notified approver, when the request is made. */
export function askedNotice(userId: number, request: AccessRequestRow): Notice {
  return {
    user_id: userId,
    type: NOTICE_TYPE,
    title: `Access requested: ${request.permission_code} on device ${request.device_id}`,
    body:
      `User ${request.requester_id} asks for ${request.permission_code} on device ${request.device_id} ` +
      `for ${request.duration_seconds} seconds: ${request.reason}`,
    data: { access_request_id: request.id },
  };
}

/** To the requester, when the request is approved, denied or expires. */
export function outcomeNotice(request: AccessRequestRow): Notice {
  const outcome =
    request.state === 'approved'
      ? `approved until ${new Date(request.access_expires_at ?? request.expires_at).toISOString()}`
      : request.state === 'expired'
        ? 'expired without a decision'
        : request.state;
  const why = request.decision_reason === null ? '' : `: ${request.decision_reason}`;
  return {
    user_id: request.requester_id,
    type: NOTICE_TYPE,
    title: `Access request ${request.id} ${request.state}`,
    body: `Your request for ${request.permission_code} on device ${request.device_id} was ${outcome}${why}`,
    data: { access_request_id: request.id },
  };
}
