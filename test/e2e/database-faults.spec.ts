import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { actor, createUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { freePort } from '../support/redis-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { testDatabaseUrl } from '../support/test-env.js';

describe('database unreachable (through a proxy this test owns)', () => {
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    const target = new URL(testDatabaseUrl());
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432), await freePort());
    await proxy.open();
    const viaProxy = new URL(testDatabaseUrl());
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    t = await startApp({ redisUrl: null, databaseUrl: viaProxy.toString() });
  });
  afterAll(async () => {
    await proxy.cut();
    await t.close().catch(() => undefined);
  });

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After, and recovers by itself', async () => {
    await t.http().get('/v1/test/widgets').expect(200);
    await proxy.cut();

    const list = await t.http().get('/v1/test/widgets').expect(503);
    expect(list.headers['retry-after']).toBe('1');
    expect(list.body.error).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      message: 'The database is unreachable; retry shortly',
      details: { dependency: 'database', reason: 'unreachable' },
    });
    const write = await t.http().post('/v1/test/widgets').send({ name: 'lost', category: 'tool' }).expect(503);
    expect(write.body.error.code).toBe('SERVICE_UNAVAILABLE');
    const ready = await t.http().get('/health/ready').expect(503);
    expect(ready.body.error).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      details: { database: 'down', cache: 'memory' },
    });
    await t.http().get('/health/live').expect(200);

    await proxy.open();
    await t.http().get('/health/ready').expect(200);
    await t.http().get('/v1/test/widgets').expect(200);
  });
});

describe('PostgreSQL connections terminated mid-flight (pg_terminate_backend)', () => {
  const applicationName = `admin-api-fault-${randomUUID().slice(0, 8)}`;
  let t: TestApp;
  beforeAll(async () => {
    // Its five writes inside PostgreSQL at once (by default an instance runs two per core).
    t = await startApp({
      redisUrl: null,
      widgets: false,
      env: { DB_APPLICATION_NAME: applicationName, DB_WRITE_CONCURRENCY: '5' },
    });
  });
  afterAll(() => t.close());

  it('requests fail cleanly with 503 (never a 500 or a hang) and the next ones succeed', async () => {
    const root = await actor('super_admin');
    const target = await createUser();
    // Hold the target's row so that the PATCHes below are in flight inside PostgreSQL, waiting.
    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [target.id]);
    const inFlight = Array.from({ length: 5 }, (_, index) =>
      t
        .http()
        .patch(`/v1/admin/users/${target.id}`)
        .set('Authorization', root.auth)
        .send({ display_name: `Blocked ${index}` })
        .then((response) => response),
    );
    try {
      await waitFor(
        async () =>
          (
            await sql<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
              [applicationName],
            )
          )[0]?.n === 5,
      );
      // Only this app's own connections: other specs share the database.
      await sql('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
        applicationName,
      ]);
      for (const response of await Promise.all(inFlight)) {
        expect(response.status).toBe(503);
        expect(response.body.error).toEqual({
          code: 'SERVICE_UNAVAILABLE',
          message: 'The database is unreachable; retry shortly',
          details: { dependency: 'database', reason: 'unreachable' },
        });
      }
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    expect(await sql('SELECT display_name FROM users WHERE id = $1', [target.id])).toEqual([
      { display_name: 'Test viewer' },
    ]);
    await t
      .http()
      .patch(`/v1/admin/users/${target.id}`)
      .set('Authorization', root.auth)
      .send({ display_name: 'After' })
      .expect(200);
    await Promise.all(
      Array.from({ length: 10 }, () =>
        t.http().get('/v1/admin/users?page_size=5').set('Authorization', root.auth).expect(200),
      ),
    );
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await sleep(50);
  }
}
