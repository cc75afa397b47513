import { ApiError } from '../platform/http/api-error.js';
import type { ErrorCode } from '../platform/http/error-codes.js';
import type { ErrorDialect } from '../platform/http/error-dialect.js';

/** SCIM's media type (RFC 7644 §3.1): every answer under /scim/v2 is in it. */
export const SCIM_MEDIA_TYPE = 'application/scim+json; charset=utf-8';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** The `scimType`s of RFC 7644 §3.12 this service answers with. */
export type ScimType =
  | 'invalidFilter'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'invalidValue'
  | 'noTarget'
  | 'mutability'
  | 'uniqueness'
  | 'tooMany';

export const SCIM_TYPES: readonly ScimType[] = [
  'invalidFilter',
  'invalidSyntax',
  'invalidPath',
  'invalidValue',
  'noTarget',
  'mutability',
  'uniqueness',
  'tooMany',
];
const IS_SCIM_TYPE = new Set<string>(SCIM_TYPES);

/**
 * A 400 of SCIM's own kind: VALIDATION_FAILED of the one error table, its rule the `scimType`,
 * so the same failure reads the same in the log and the audit trail as any other bad input.
 */
export function scimProblem(scimType: ScimType, message: string, field = 'body'): ApiError {
  return ApiError.field(field, scimType, message);
}

// The rules of part 5 (rank, self, delegation) are 403 in SCIM (part 6.19); uniqueness is 409.
const FORBIDDEN: ReadonlySet<ErrorCode> = new Set([
  'ROLE_ESCALATION_FORBIDDEN',
  'DELEGATION_FORBIDDEN',
  'SELF_ACTION_FORBIDDEN',
  'ROLE_FORBIDDEN',
  'PERMISSION_DENIED',
]);
const UNIQUENESS: ReadonlySet<ErrorCode> = new Set([
  'USER_EMAIL_TAKEN',
  'USER_NAME_TAKEN',
  'EXTERNAL_ID_TAKEN',
  'GROUP_NAME_TAKEN',
]);

/** The SCIM status and `scimType` of a refusal of the error table. */
export function scimStatusOf(error: ApiError): { status: number; scimType?: ScimType } {
  if (FORBIDDEN.has(error.code)) return { status: 403 };
  if (UNIQUENESS.has(error.code)) return { status: 409, scimType: 'uniqueness' };
  if (error.code === 'MALFORMED_JSON') return { status: 400, scimType: 'invalidSyntax' };
  if (error.code === 'VALIDATION_FAILED') {
    const fields = error.details.fields as readonly { field?: string; rule?: string }[] | undefined;
    const rule = fields?.[0]?.rule ?? '';
    if (IS_SCIM_TYPE.has(rule)) return { status: 400, scimType: rule as ScimType };
    // Anything refused in the filter parameter (a NUL in it, say) is a filter SCIM cannot take.
    if (fields?.[0]?.field === 'filter') return { status: 400, scimType: 'invalidFilter' };
    // The body as a whole is not what SCIM reads (not an object, too deep, not UTF-8).
    if (fields?.[0]?.field === 'body') return { status: 400, scimType: 'invalidSyntax' };
    return { status: 400, scimType: 'invalidValue' };
  }
  // A state the write may not reach (nesting in a cycle, an owner's right): the value is refused.
  if (error.status === 422) return { status: 400, scimType: 'invalidValue' };
  return { status: error.status };
}

/** SCIM's error schema (RFC 7644 §3.12) for every refusal of a /scim/v2 route. */
export const SCIM_ERRORS: ErrorDialect = {
  contentType: SCIM_MEDIA_TYPE,
  render(error) {
    const { status, scimType } = scimStatusOf(error);
    return {
      status,
      body: {
        schemas: [ERROR_SCHEMA],
        status: String(status),
        ...(scimType === undefined ? {} : { scimType }),
        detail: error.message,
      },
    };
  },
};
