import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import createClient from 'openapi-fetch';
import type { paths } from '../client/api.js';
import { adminFlow } from '../client/flow.js';
import { generateClientTypes } from '../client/generate.js';
import { actor } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { jobsSchema } from '../support/jobs.js';

/*
 * A real client: types generated from the committed openapi.json by openapi-typescript, a flow
 * through openapi-fetch type-checked by tsc, then run against the service. The document drifting
 * from the code fails one of the three: the generated types differ from test/client/api.d.ts (run
 * `npm run openapi`), the flow no longer type-checks, or the service answers otherwise.
 */
const TYPES = new URL('../client/api.d.ts', import.meta.url);
const TSC = new URL('../../node_modules/typescript/bin/tsc', import.meta.url).pathname;
const CLIENT_TSCONFIG = new URL('../client/tsconfig.json', import.meta.url).pathname;

describe('a client generated from openapi.json (openapi-typescript + openapi-fetch)', () => {
  it('the committed client types are what openapi-typescript generates from the committed document', async () => {
    const generated = await generateClientTypes();
    if (process.env.UPDATE_OPENAPI === '1') writeFileSync(TYPES, generated);
    expect(generated).toBe(readFileSync(TYPES, 'utf8'));
  });

  it('the flow type-checks against those types with tsc --strict', () => {
    const tsc = spawnSync(process.execPath, [TSC, '-p', CLIENT_TSCONFIG], { encoding: 'utf8' });
    expect({ status: tsc.status, output: tsc.stdout + tsc.stderr }).toEqual({ status: 0, output: '' });
  }, 120_000);

  describe('the flow against the running service', () => {
    let t: TestApp;
    let baseUrl: string;
    beforeAll(async () => {
      t = await startApp({ widgets: false, env: { JOBS_SCHEMA: jobsSchema(), JOB_WORKERS: 'true' } });
      await t.app.listen(0, '127.0.0.1');
      baseUrl = await t.app.getUrl();
    });
    afterAll(() => t.close());

    it('creates a user, lists with a filter and a sort, transfers a device, bulk-grants and reads a push job', async () => {
      const root = await actor('super_admin');
      const client = createClient<paths>({ baseUrl, headers: { Authorization: root.auth } });
      const tag = randomUUID().slice(0, 8);
      const result = await adminFlow(client, tag);

      const [user] = await sql<{ id: number; role_id: number; status_id: number }>(
        'SELECT id, role_id, status_id FROM users WHERE email = $1',
        [`client-${tag}@example.com`],
      );
      expect(user).toEqual({ id: result.userId, role_id: 3, status_id: 2 });
      expect(result.listedIds).toEqual([result.userId]);
      expect(result.previousOwner).toBeNull();
      expect(await sql('SELECT owner_user_id FROM devices WHERE id = $1', [result.deviceId])).toEqual([
        { owner_user_id: result.userId },
      ]);
      expect(result.granted).toHaveLength(2);
      expect(result.granted.every((item) => item.endsWith(':granted'))).toBe(true);
      expect(
        await sql<{ n: number }>(
          'SELECT count(*)::int AS n FROM authority_permissions ap JOIN authorities a ON a.id = ap.authority_id WHERE a.device_id = $1 AND NOT a.owner',
          [result.deviceId],
        ),
      ).toEqual([{ n: 2 }]);
      // The new owner has no mobile device: the push job succeeds with nothing to send.
      expect(result.pushJobState).toBe('succeeded');
      expect(result.pushResult).toMatchObject({ sent: 0, devices: 0 });
    }, 60_000);
  });
});
