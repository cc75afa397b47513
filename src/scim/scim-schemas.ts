/*
 * What the service provider says of itself (RFC 7643 §5–7, RFC 7644 §4): read by an identity
 * provider before it is configured, so these routes need no token. Built once: they never change
 * while the process runs.
 */

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

/** The most resources one list page holds (`count`), as `filter.maxResults` says. */
export const MAX_RESULTS = 100;

export const SCIM_BASE = '/scim/v2';

export const SERVICE_PROVIDER_CONFIG = {
  schemas: [CONFIG_SCHEMA],
  patch: { supported: true },
  bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
  filter: { supported: true, maxResults: MAX_RESULTS },
  changePassword: { supported: false },
  sort: { supported: false },
  etag: { supported: true },
  authenticationSchemes: [
    {
      type: 'oauthbearertoken',
      name: 'OAuth Bearer Token',
      description: 'A session token (JWT) of a user holding scim.provision: issue-token --ttl-seconds',
      primary: true,
    },
  ],
  meta: { resourceType: 'ServiceProviderConfig', location: `${SCIM_BASE}/ServiceProviderConfig` },
};

const RESOURCE_TYPES = [
  {
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: 'User',
    name: 'User',
    endpoint: '/Users',
    description: 'A user of the admin API',
    schema: USER_SCHEMA,
    schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
    meta: { resourceType: 'ResourceType', location: `${SCIM_BASE}/ResourceTypes/User` },
  },
  {
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: 'Group',
    name: 'Group',
    endpoint: '/Groups',
    description: 'A group that holds roles and rights for its members',
    schema: GROUP_SCHEMA,
    meta: { resourceType: 'ResourceType', location: `${SCIM_BASE}/ResourceTypes/Group` },
  },
];

interface AttributeOptions {
  readonly type?: 'string' | 'boolean' | 'complex' | 'dateTime' | 'reference';
  readonly multiValued?: boolean;
  readonly required?: boolean;
  readonly caseExact?: boolean;
  readonly mutability?: 'readOnly' | 'readWrite' | 'immutable';
  readonly uniqueness?: 'none' | 'server';
  readonly subAttributes?: readonly object[];
  readonly description?: string;
}

function attribute(name: string, options: AttributeOptions = {}): object {
  return {
    name,
    type: options.type ?? 'string',
    multiValued: options.multiValued ?? false,
    description: options.description ?? '',
    required: options.required ?? false,
    caseExact: options.caseExact ?? false,
    mutability: options.mutability ?? 'readWrite',
    returned: 'default',
    uniqueness: options.uniqueness ?? 'none',
    ...(options.subAttributes === undefined ? {} : { subAttributes: options.subAttributes }),
  };
}

const typedValue = (types: readonly string[]): readonly object[] => [
  attribute('value'),
  attribute('type', { description: `One of ${types.join(', ')}` }),
  attribute('primary', { type: 'boolean' }),
];

const SCHEMAS = [
  {
    id: USER_SCHEMA,
    name: 'User',
    description: 'User account',
    attributes: [
      attribute('userName', { required: true, uniqueness: 'server', description: 'Unique, case-insensitive, 1–254' }),
      attribute('externalId', { caseExact: true, uniqueness: 'server' }),
      attribute('name', {
        type: 'complex',
        subAttributes: [attribute('formatted'), attribute('givenName'), attribute('familyName')],
      }),
      attribute('displayName', { description: '1–100; else name.formatted, else givenName familyName' }),
      attribute('active', { type: 'boolean', description: 'false suspends the user and revokes every session' }),
      attribute('emails', { type: 'complex', multiValued: true, subAttributes: typedValue(['work']) }),
      attribute('phoneNumbers', {
        type: 'complex',
        multiValued: true,
        subAttributes: typedValue(['mobile']),
        description: 'The mobile number (else the first) is kept when it is E.164',
      }),
      attribute('groups', {
        type: 'complex',
        multiValued: true,
        mutability: 'readOnly',
        subAttributes: [
          attribute('value', { mutability: 'readOnly' }),
          attribute('display', { mutability: 'readOnly' }),
        ],
        description: 'The groups the user belongs to directly',
      }),
    ],
    meta: { resourceType: 'Schema', location: `${SCIM_BASE}/Schemas/${USER_SCHEMA}` },
  },
  {
    id: GROUP_SCHEMA,
    name: 'Group',
    description: 'Group',
    attributes: [
      attribute('displayName', {
        required: true,
        uniqueness: 'server',
        description: 'Unique, case-insensitive, 1–100',
      }),
      attribute('externalId', { caseExact: true, uniqueness: 'server' }),
      attribute('members', {
        type: 'complex',
        multiValued: true,
        subAttributes: [attribute('value', { mutability: 'immutable' }), attribute('type'), attribute('display')],
        description: 'Direct members: type User, or Group for a nested group',
      }),
    ],
    meta: { resourceType: 'Schema', location: `${SCIM_BASE}/Schemas/${GROUP_SCHEMA}` },
  },
  {
    id: ENTERPRISE_SCHEMA,
    name: 'EnterpriseUser',
    description: 'Enterprise user',
    attributes: [
      attribute('employeeNumber'),
      attribute('department'),
      attribute('manager', { type: 'complex', subAttributes: [attribute('value'), attribute('displayName')] }),
    ],
    meta: { resourceType: 'Schema', location: `${SCIM_BASE}/Schemas/${ENTERPRISE_SCHEMA}` },
  },
].map((schema) => ({ schemas: [SCHEMA_SCHEMA], ...schema }));

function listOf(resources: readonly object[]): Record<string, unknown> {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

export const RESOURCE_TYPE_LIST = listOf(RESOURCE_TYPES);
export const SCHEMA_LIST = listOf(SCHEMAS);
