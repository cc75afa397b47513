import { readFileSync, writeFileSync } from 'node:fs';
import { buildOpenApi } from '../../src/platform/http/openapi/openapi.js';
import { startApp, type TestApp } from '../support/app.js';

const COMMITTED = new URL('../../openapi.json', import.meta.url);

describe('OpenAPI document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ redisUrl: null, widgets: false });
  });
  afterAll(() => t.close());

  it('matches the committed openapi.json (run `npm run openapi` after changing routes)', () => {
    const current = `${JSON.stringify(buildOpenApi(t.app), null, 2)}\n`;
    if (process.env.UPDATE_OPENAPI === '1') writeFileSync(COMMITTED, current);
    expect(current).toBe(readFileSync(COMMITTED, 'utf8'));
  });

  it('declares on every route the answers part 13 names for its kind, and path ids as integers', () => {
    const document = JSON.parse(readFileSync(COMMITTED, 'utf8')) as {
      paths: Record<
        string,
        Record<
          string,
          {
            security?: unknown[];
            responses: Record<string, unknown>;
            parameters?: { in: string; name: string; schema: Record<string, unknown> }[];
          }
        >
      >;
    };
    const missing: string[] = [];
    const numericIds: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!path.startsWith('/v1/admin')) continue;
        const expected = [400, 401, 403, 429, 503];
        if (['post', 'put', 'patch'].includes(method)) expected.push(413, 415);
        if (method === 'post') expected.push(409, 422);
        for (const status of expected)
          if (operation.responses[String(status)] === undefined)
            missing.push(`${method.toUpperCase()} ${path}: ${status}`);
        for (const parameter of operation.parameters ?? [])
          if (parameter.in === 'path' && parameter.schema.type === 'number')
            numericIds.push(`${path} ${parameter.name}`);
      }
    }
    expect(missing).toEqual([]);
    expect(numericIds).toEqual([]);
    expect(document.paths['/v1/admin/users/{id}']?.get?.parameters?.[0]?.schema).toMatchObject({
      type: 'integer',
      pattern: '^[1-9][0-9]{0,15}$',
    });
  });

  it('is served at /docs/openapi.json with Swagger UI at /docs', async () => {
    const json = await t.http().get('/docs/openapi.json').expect(200);
    expect(json.body.info.title).toBe('Admin API');
    expect(Object.keys(json.body.paths)).toEqual(expect.arrayContaining(['/health/live', '/health/ready']));
    const ui = await t.http().get('/docs').redirects(1).expect(200);
    expect(ui.text).toContain('swagger-ui');
  });
});
