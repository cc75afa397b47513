import { startApp, type TestApp } from '../support/app.js';
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
    t = await startApp({ redisUrl: null, databaseUrl: viaProxy.toString(), env: { DB_CONNECT_TIMEOUT_MS: '500' } });
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
    expect(list.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: 'The database is unreachable; retry shortly', details: {} });
    const write = await t.http().post('/v1/test/widgets').send({ name: 'lost', category: 'tool' }).expect(503);
    expect(write.body.error.code).toBe('SERVICE_UNAVAILABLE');
    const ready = await t.http().get('/health/ready').expect(503);
    expect(ready.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { database: 'down', cache: 'memory' } });
    await t.http().get('/health/live').expect(200);

    await proxy.open();
    await t.http().get('/health/ready').expect(200);
    await t.http().get('/v1/test/widgets').expect(200);
  });
});
