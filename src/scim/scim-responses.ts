import { BareResponse, NoContent } from '../platform/http/responses.js';
import { SCIM_MEDIA_TYPE } from './scim-error.js';
import type { Doc } from './scim-patch.js';
import type { ScimAnswer } from './scim-users.service.js';

/** A SCIM document answered in SCIM's media type. */
export function scimDocument(body: Doc): BareResponse {
  return new BareResponse(body, { contentType: SCIM_MEDIA_TYPE });
}

/**
 * One resource: its ETag (`W/"<version>"`, as `meta.version`), and on creation 201 with Location.
 * A PATCH whose client asked for no content (`Prefer: return=minimal`) is 204.
 */
export function scimResource(answer: ScimAnswer, minimal = false): BareResponse | NoContent {
  if (minimal) return NoContent.instance;
  const meta = answer.resource.meta as { location?: string } | undefined;
  return new BareResponse(answer.resource, {
    status: answer.created === true ? 201 : 200,
    contentType: SCIM_MEDIA_TYPE,
    headers: {
      etag: `W/"${answer.version}"`,
      ...(answer.created === true && meta?.location !== undefined ? { location: meta.location } : {}),
    },
  });
}

/** `Prefer: return=minimal` (RFC 7240): the client wants no body back. */
export function wantsMinimal(prefer: string | undefined): boolean {
  return prefer !== undefined && /(^|[,;\s])return=minimal($|[,;\s])/i.test(prefer);
}
