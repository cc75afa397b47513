import { isEmail } from 'class-validator';
import { USER_STATUS } from '../platform/auth/roles.js';
import { scimProblem } from './scim-error.js';
import type { Doc, DocSchema } from './scim-patch.js';
import type { ScimUserRow } from './scim-users.repository.js';
import { ENTERPRISE_SCHEMA, SCIM_BASE, USER_SCHEMA } from './scim-schemas.js';

/*
 * A user between SCIM and the admin API (part 6.19): `userName` ↔ user_name (else the email),
 * `emails` (primary, else work, else first) ↔ email, `displayName` (else name.formatted, else
 * given and family name) ↔ display_name, `phoneNumbers` (mobile, else first) ↔ phone when E.164,
 * `active` ↔ status; `name` and the enterprise extension are kept as given (`scim_profile`).
 */

export const USER_DOC: DocSchema = {
  urn: USER_SCHEMA,
  attributes: [
    { name: 'id', readOnly: true },
    { name: 'meta', readOnly: true },
    { name: 'groups', multi: true, readOnly: true, subs: ['value', 'display', '$ref', 'type'] },
    { name: 'userName' },
    { name: 'externalId' },
    { name: 'displayName' },
    { name: 'name', subs: ['formatted', 'givenName', 'familyName'] },
    { name: 'active' },
    { name: 'emails', multi: true, subs: ['value', 'type', 'primary', 'display'] },
    { name: 'phoneNumbers', multi: true, subs: ['value', 'type', 'primary', 'display'] },
  ],
  extension: {
    urn: ENTERPRISE_SCHEMA,
    attributes: [
      { name: 'employeeNumber' },
      { name: 'department' },
      { name: 'manager', subs: ['value', 'displayName', '$ref'] },
    ],
  },
};

const E164 = /^\+[1-9]\d{1,14}$/;
// eslint-disable-next-line no-control-regex -- exactly what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;

const iso = (value: Date | string): string => new Date(value).toISOString();

/** The user as SCIM shows it (RFC 7643 §4.1). */
export function scimUser(row: ScimUserRow): Doc {
  const profile = (row.scim_profile ?? {}) as { name?: Doc; enterprise?: Doc };
  const enterprise = profile.enterprise;
  return {
    schemas: enterprise === undefined ? [USER_SCHEMA] : [USER_SCHEMA, ENTERPRISE_SCHEMA],
    id: row.id,
    ...(row.external_id === null ? {} : { externalId: row.external_id }),
    userName: row.user_name ?? row.email,
    ...(profile.name === undefined ? {} : { name: profile.name }),
    displayName: row.display_name,
    active: row.status_id === USER_STATUS.active,
    emails: [{ value: row.email, type: 'work', primary: true }],
    ...(row.phone === null ? {} : { phoneNumbers: [{ value: row.phone, type: 'mobile', primary: true }] }),
    groups: row.groups.map((group) => ({ ...group, $ref: `${SCIM_BASE}/Groups/${group.value}` })),
    ...(enterprise === undefined ? {} : { [ENTERPRISE_SCHEMA]: enterprise }),
    meta: {
      resourceType: 'User',
      created: iso(row.created_at),
      lastModified: iso(row.updated_at),
      location: `${SCIM_BASE}/Users/${row.id}`,
      version: `W/"${row.version}"`,
    },
  };
}

/**
 * What a PATCH starts from: the writable attributes as `scimUser` shows them, but `active`, which
 * only an operation that names it changes (a pending user shows `active: false`, and a PATCH of
 * its name must not suspend it).
 */
export function editableUser(row: ScimUserRow): Doc {
  const { id: _id, meta: _meta, groups: _groups, schemas: _schemas, active: _active, ...rest } = scimUser(row);
  return rest;
}

/** A user's writable attributes, read from a SCIM document (a POST or PUT body, or a patched document). */
export interface ScimUserInput {
  readonly user_name: string;
  readonly external_id: string | null;
  readonly email: string;
  readonly display_name: string;
  readonly phone: string | null;
  /** Absent when the document does not say. */
  readonly active?: boolean;
  readonly scim_profile: Readonly<Record<string, unknown>> | null;
}

function text(value: unknown, name: string, max: number): string {
  if (typeof value !== 'string') throw scimProblem('invalidValue', `${name} must be a string`, name);
  const trimmed = value.trim();
  if (trimmed.length === 0 || trimmed.length > max)
    throw scimProblem('invalidValue', `${name} must be 1–${max} characters`, name);
  if (CONTROL.test(trimmed)) throw scimProblem('invalidValue', `${name} holds a control character`, name);
  return trimmed;
}

function optionalText(value: unknown, name: string, max: number): string | undefined {
  return value === undefined || value === null || value === '' ? undefined : text(value, name, max);
}

/** A boolean, also as Entra ID sends it: the strings "True" and "False" in any letter case. */
export function booleanOf(value: unknown, name: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw scimProblem('invalidValue', `${name} must be true or false`, name);
}

function listOf(value: unknown, name: string): Doc[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  return list.map((item, index) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      throw scimProblem('invalidValue', `${name}[${index}] must be an object`, name);
    return item as Doc;
  });
}

/** The one of a multi-valued attribute's values that counts: primary, else of `type`, else the first. */
function chosen(values: readonly Doc[], type: string): Doc | undefined {
  return (
    values.find(
      (item) => item.primary === true || (typeof item.primary === 'string' && item.primary.toLowerCase() === 'true'),
    ) ??
    values.find((item) => typeof item.type === 'string' && item.type.toLowerCase() === type) ??
    values[0]
  );
}

function profileOf(doc: Doc): Readonly<Record<string, unknown>> | null {
  const profile: Record<string, unknown> = {};
  const name = doc.name as Doc | undefined;
  if (name !== undefined && name !== null) {
    if (typeof name !== 'object' || Array.isArray(name))
      throw scimProblem('invalidValue', 'name must be an object', 'name');
    const kept: Record<string, string> = {};
    for (const key of ['formatted', 'givenName', 'familyName'] as const) {
      const value = optionalText(name[key], `name.${key}`, 255);
      if (value !== undefined) kept[key] = value;
    }
    if (Object.keys(kept).length > 0) profile.name = kept;
  }
  const extension = doc[ENTERPRISE_SCHEMA] as Doc | undefined;
  if (extension !== undefined && extension !== null && typeof extension === 'object' && !Array.isArray(extension)) {
    const kept: Record<string, unknown> = {};
    for (const key of ['employeeNumber', 'department'] as const) {
      const value = optionalText(extension[key], key, 255);
      if (value !== undefined) kept[key] = value;
    }
    const manager = extension.manager;
    // Entra ID sends the manager as its id, or as { value }.
    const managerId =
      typeof manager === 'string'
        ? optionalText(manager, 'manager', 255)
        : typeof manager === 'object' && manager !== null
          ? optionalText((manager as Doc).value, 'manager.value', 255)
          : undefined;
    if (managerId !== undefined) kept.manager = { value: managerId };
    if (Object.keys(kept).length > 0) profile.enterprise = kept;
  }
  return Object.keys(profile).length === 0 ? null : profile;
}

/**
 * The admin API's fields of a SCIM user document; `current` (the user's email) is kept when the
 * document names none and its userName is no email address.
 */
export function userInput(doc: Doc, currentEmail?: string): ScimUserInput {
  const userName = text(doc.userName, 'userName', 254);
  const emails = listOf(doc.emails, 'emails');
  const chosenEmail = chosen(emails, 'work')?.value;
  const email =
    chosenEmail !== undefined && chosenEmail !== null && chosenEmail !== ''
      ? text(chosenEmail, 'emails.value', 254)
      : isEmail(userName, { require_tld: true })
        ? userName
        : currentEmail;
  if (email === undefined)
    throw scimProblem(
      'invalidValue',
      'An email is required: send emails, or a userName that is an email address',
      'emails',
    );
  if (!isEmail(email, { require_tld: true }))
    throw scimProblem('invalidValue', `${email} is not an email address`, 'emails');
  const name = (typeof doc.name === 'object' && doc.name !== null ? doc.name : {}) as Doc;
  const joined = [name.givenName, name.familyName]
    .filter((part) => typeof part === 'string' && part.trim() !== '')
    .join(' ');
  const displayName =
    optionalText(doc.displayName, 'displayName', 100) ??
    optionalText(name.formatted, 'name.formatted', 100) ??
    optionalText(joined, 'name', 100) ??
    userName.slice(0, 100);
  const phone = chosen(listOf(doc.phoneNumbers, 'phoneNumbers'), 'mobile')?.value;
  return {
    user_name: userName,
    external_id: optionalText(doc.externalId, 'externalId', 255) ?? null,
    email,
    display_name: displayName,
    // A number that is not E.164 is not kept (the admin API holds only E.164).
    phone: typeof phone === 'string' && E164.test(phone.replace(/[\s()-]/g, '')) ? phone.replace(/[\s()-]/g, '') : null,
    ...(doc.active === undefined || doc.active === null ? {} : { active: booleanOf(doc.active, 'active') }),
    scim_profile: profileOf(doc),
  };
}
