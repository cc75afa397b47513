import { readFileSync, writeFileSync } from 'node:fs';
import { buildOpenApi } from '../../src/platform/http/openapi/openapi.js';
import { startApp, type TestApp } from '../support/app.js';
import { actor } from '../support/auth.js';

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
        const expected = [400, 401, 403, 429, 503, 431];
        if (['post', 'put', 'patch', 'delete'].includes(method)) expected.push(413, 415);
        if (path.includes('{')) expected.push(404, 414);
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

  it('declares what the HTTP layer answers on each route, found by asking it: a body over the limit, a path segment over the limit', async () => {
    // The class, not instances (issue 42 item 4): every route is sent what makes the HTTP layer
    // refuse, and whatever status comes back must be in that route's responses.
    const document = JSON.parse(readFileSync(COMMITTED, 'utf8')) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    const root = await actor('super_admin');
    const undeclared: string[] = [];
    const big = JSON.stringify({ padding: 'x'.repeat(2 * 1_048_576) });
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        const url = path.replace(/\{[^}]+\}/g, '1');
        const http = t.http();
        const verb = method as 'get' | 'post' | 'put' | 'patch' | 'delete';
        const answers: number[] = [];
        if (verb !== 'get') {
          const sent = await http[verb](url)
            .set('Authorization', root.auth)
            .set('Content-Type', 'application/json')
            .send(big);
          answers.push(sent.status);
        }
        if (path.includes('{')) {
          const long = path.replace(/\{[^}]+\}/, 'x'.repeat(201)).replace(/\{[^}]+\}/g, '1');
          answers.push((await t.http()[verb](long).set('Authorization', root.auth)).status);
        }
        for (const status of answers)
          if (operation.responses[String(status)] === undefined)
            undeclared.push(`${method.toUpperCase()} ${path}: ${status}`);
      }
    }
    expect(undeclared).toEqual([]);
  });

  it('is served at /docs/openapi.json with Swagger UI at /docs', async () => {
    const json = await t.http().get('/docs/openapi.json').expect(200);
    expect(json.body.info.title).toBe('Admin API');
    expect(Object.keys(json.body.paths)).toEqual(expect.arrayContaining(['/health/live', '/health/ready']));
    const ui = await t.http().get('/docs').redirects(1).expect(200);
    expect(ui.text).toContain('swagger-ui');
  });
});
