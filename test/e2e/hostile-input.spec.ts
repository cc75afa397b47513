import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { actor } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';

interface OpenApi {
  paths: Record<string, Record<string, unknown>>;
}
const document = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as OpenApi;

/** Every POST and PATCH of the API, with its path parameters filled in. */
// The admin API's writes. SCIM's (/scim/v2) speak another protocol: attributes they do not keep
// are ignored as RFC 7644 and identity providers expect, and `id` and `meta` are refused as
// `mutability` (scim-bad-input.spec.ts, scim-attacks.spec.ts).
const WRITES = Object.entries(document.paths)
  .filter(([path]) => !path.startsWith('/scim/'))
  .flatMap(([path, operations]) =>
    Object.keys(operations)
      .filter((method) => method === 'post' || method === 'patch')
      .map((method) => ({ method: method, path: path.replace(/\{[^}]+\}/g, '1') })),
  );
const INJECTED = [
  'id',
  'owner',
  'is_deleted',
  'created_at',
  'updated_at',
  'created_by',
  'updated_by',
  'deleted_at',
  'deleted_by',
  'granted_by',
  'revoked_by',
  'transferred_by',
  'deactivated_by',
  'version',
];
const LEAK =
  /\bat [^\n]+:\d+:\d+|node_modules|SELECT |INSERT |UPDATE [a-z_]+ SET|relation "|duplicate key|syntax error at/;

describe('hostile input on every write route', () => {
  let t: TestApp;
  let auth: string;
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    auth = (await actor('super_admin')).auth;
  });
  afterAll(() => t.close());

  const send = (method: 'post' | 'patch', path: string, body: object, requestId: string = randomUUID()) => {
    const agent = t.http();
    return agent[method](path)
      .set('Authorization', auth)
      .set('X-Request-Id', requestId)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(body));
  };

  it('covers the write routes of the OpenAPI document', () => {
    expect(WRITES.length).toBeGreaterThanOrEqual(30);
  });

  it.each(WRITES)(
    '$method $path: an audit field, id, owner or is_deleted in the body is a 400 and writes nothing',
    async ({ method, path }) => {
      for (const field of INJECTED) {
        const requestId = `hostile-${randomUUID()}`;
        const response = await send(
          method,
          path,
          { [field]: field.endsWith('_at') ? '2026-01-01T00:00:00Z' : 1 },
          requestId,
        );
        expect({ field, status: response.status, code: response.body.error?.code }).toEqual({
          field,
          status: 400,
          code: 'VALIDATION_FAILED',
        });
        expect(response.body.error.details.fields).toEqual(
          expect.arrayContaining([expect.objectContaining({ field, rule: 'unknown' })]),
        );
        expect(response.text).not.toMatch(LEAK);
        expect(await sql('SELECT id FROM audit_events WHERE request_id = $1', [requestId])).toEqual([]);
      }
    },
  );

  it('oversize page_size, bulk arrays, bodies, strings and deep nesting are 4xx, and the process stays up', async () => {
    const responses = [
      await t.http().get('/v1/admin/users?page_size=100000').set('Authorization', auth),
      await send('post', '/v1/admin/authority-permissions/bulk-grant', {
        items: Array.from({ length: 1001 }, () => ({ authority_id: 1, permission_id: 13 })),
      }),
      await send('post', '/v1/admin/inbox/bulk-delete', {
        items: Array.from({ length: 5000 }, (_, id) => ({ id: id + 1 })),
      }),
      await send('post', '/v1/admin/users', {
        email: 'big@example.com',
        display_name: 'x'.repeat(2_000_000),
        role_id: 4,
      }),
      await send('post', '/v1/admin/users', {
        email: 'long@example.com',
        display_name: 'x'.repeat(100_000),
        role_id: 4,
      }),
      await t
        .http()
        .post('/v1/admin/inbox')
        .set('Authorization', auth)
        .set('Content-Type', 'application/json')
        .send(
          `{"user_id":1,"type":"notice","title":"deep","body":"b","data":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`,
        ),
      await t
        .http()
        .post('/v1/admin/users')
        .set('Authorization', auth)
        .set('Idempotency-Key', randomUUID())
        .set('Content-Type', 'application/json')
        .send(`${'['.repeat(50_000)}${']'.repeat(50_000)}`),
    ];
    expect(responses.map((response) => response.status)).toEqual([400, 400, 400, 413, 400, 400, 400]);
    for (const response of responses) expect(response.text).not.toMatch(LEAK);
    expect(responses[5]?.body.error.details.fields[0]).toMatchObject({ field: 'body', rule: 'depth' });
    await t.http().get('/health/live').expect(200);
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', auth).expect(200);
  });
});
