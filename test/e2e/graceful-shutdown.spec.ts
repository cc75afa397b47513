import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { createUser, tokenFor } from '../support/auth.js';
import { sql } from '../support/db.js';
import { freePort } from '../support/redis-server.js';
import { startServer, waitReady } from '../support/server-process.js';
import { TEST_JWT_SECRET, testDatabaseUrl } from '../support/test-env.js';

describe('SIGTERM with requests in flight (the built server as a process)', () => {
  it('finishes all 20 in-flight requests with 2xx, then exits 0 within its timeout', async () => {
    const port = await freePort();
    const applicationName = `admin-api-shutdown-${randomUUID().slice(0, 8)}`;
    const server = startServer({
      PORT: String(port),
      DATABASE_URL: testDatabaseUrl(),
      JWT_SECRET: TEST_JWT_SECRET,
      DB_POOL_SIZE: '30',
      // All 20 writes inside PostgreSQL at once (by default an instance runs two per core).
      DB_WRITE_CONCURRENCY: '20',
      DB_APPLICATION_NAME: applicationName,
      JOB_WORKERS: 'false',
      SHUTDOWN_TIMEOUT_MS: '8000',
    });
    expect((await waitReady(port, server)).status).toBe(200);
    const admin = await createUser({ role: 'super_admin' });
    const token = await tokenFor(admin);
    const target = await createUser();

    // Hold the target's row: the 20 PATCHes below are received and then wait inside PostgreSQL.
    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [target.id]);
    const requests = Array.from({ length: 20 }, (_, index) =>
      fetch(`http://127.0.0.1:${port}/v1/admin/users/${target.id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ display_name: `In flight ${index}` }),
      }),
    );
    try {
      for (let waiting = 0; waiting < 20;) {
        await sleep(50);
        waiting =
          (
            await sql<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
              [applicationName],
            )
          )[0]?.n ?? 0;
      }
      const signalledAt = Date.now();
      server.child.kill('SIGTERM');
      await sleep(300);
      // Still running: it is waiting for the requests, not dropping them.
      expect(server.child.exitCode).toBeNull();
      await holder.query('ROLLBACK');
      const statuses = await Promise.all(requests.map(async (request) => (await request).status));
      expect(statuses).toEqual(Array.from({ length: 20 }, () => 200));
      const code = await server.exited;
      expect({ code, log: code === 0 ? '' : server.output().slice(-2000) }).toEqual({ code: 0, log: '' });
      expect(Date.now() - signalledAt).toBeLessThan(8000);
      expect(server.output()).toContain('shutting down: finishing in-flight requests');
    } finally {
      await holder.end().catch(() => undefined);
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    }
    expect(await sql('SELECT version FROM users WHERE id = $1', [target.id])).toEqual([{ version: 21 }]);
  }, 60_000);
});
