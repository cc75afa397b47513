import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type supertest from 'supertest';
import type { TestApp } from './app.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/scim/', import.meta.url));

/** A fixture payload (`test/fixtures/scim/<name>.json`) with its `{{placeholders}}` filled in (as JSON strings). */
export function fixture(name: string, values: Record<string, string | number> = {}): Record<string, unknown> {
  const text = readFileSync(`${FIXTURES}${name}.json`, 'utf8').replace(/\{\{(\w+)\}\}/g, (_match, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`fixture ${name}: no value for {{${key}}}`);
    return JSON.stringify(String(value)).slice(1, -1);
  });
  return JSON.parse(text) as Record<string, unknown>;
}

export const SCIM_JSON = 'application/scim+json';

/** Requests to /scim/v2 as an identity provider sends them (SCIM's media type, a bearer token). */
export function scim(t: TestApp, who: { auth: string }, contentType = SCIM_JSON) {
  const base = '/scim/v2';
  const send = (request: supertest.Test, body?: object): supertest.Test =>
    body === undefined
      ? request.set('Authorization', who.auth)
      : request.set('Authorization', who.auth).set('Content-Type', contentType).send(JSON.stringify(body));
  return {
    get: (path: string): supertest.Test => send(t.http().get(`${base}${path}`)),
    post: (path: string, body: object): supertest.Test => send(t.http().post(`${base}${path}`), body),
    put: (path: string, body: object): supertest.Test => send(t.http().put(`${base}${path}`), body),
    patch: (path: string, body: object): supertest.Test => send(t.http().patch(`${base}${path}`), body),
    delete: (path: string): supertest.Test => send(t.http().delete(`${base}${path}`)),
  };
}

/** A SCIM error body (RFC 7644 §3.12) with this status and scimType. */
export function scimError(status: number, scimType?: string): Record<string, unknown> {
  return {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    status: String(status),
    ...(scimType === undefined ? {} : { scimType }),
    detail: expect.any(String),
  };
}

/** Parses a SCIM response (supertest does not parse application/scim+json by itself). */
export function body(response: supertest.Response): Record<string, unknown> {
  return JSON.parse(response.text) as Record<string, unknown>;
}
