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

  it('is served at /docs/openapi.json with Swagger UI at /docs', async () => {
    const json = await t.http().get('/docs/openapi.json').expect(200);
    expect(json.body.info.title).toBe('Admin API');
    expect(Object.keys(json.body.paths)).toEqual(expect.arrayContaining(['/health/live', '/health/ready']));
    const ui = await t.http().get('/docs').redirects(1).expect(200);
    expect(ui.text).toContain('swagger-ui');
  });
});
