import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadSettings } from '../../src/platform/config/settings.js';
import { migrate } from '../../src/platform/database/migrate.js';
import { signToken } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { testDatabaseUrl } from '../support/test-env.js';

/*
 * The database refusing the service for real, in every way this machine can produce: a database
 * of this spec's own, used through a login role of its own (not a superuser, so connection limits
 * and NOLOGIN apply to it), broken and repaired by an administrator connection.
 */
const tag = randomUUID().slice(0, 8);
const role = `admin_api_fault_${tag}`;
const database = `admin_api_test_refusals_${tag}`;

function urlOf(db: string, user?: string): string {
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${db}`;
  if (user !== undefined) url.username = user;
  return url.toString();
}

async function admin<T>(work: (client: pg.Client) => Promise<T>, db = 'postgres'): Promise<T> {
  const client = new pg.Client({ connectionString: urlOf(db) });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Ends every session of the role, so that the next query must open a new connection. */
const terminate = (): Promise<unknown> =>
  admin((client) =>
    client.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()',
      [role],
    ),
  );

describe('the database refuses the service (part 1): every refusal is 503 with the dependency named', () => {
  let t: TestApp;
  let auth: string;
  let rootId: number;

  beforeAll(async () => {
    await admin(async (client) => {
      await client.query(`CREATE ROLE ${role} LOGIN`);
      await client.query(`CREATE DATABASE ${database} OWNER ${role}`);
    });
    const url = urlOf(database, role);
    await migrate(loadSettings({ DATABASE_URL: url }), url);
    const token = await admin(async (client) => {
      const user = await client.query<{ id: number }>(
        "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('root@example.com', 'Root', 1, 2) RETURNING id",
      );
      const id = Number(user.rows[0]?.id);
      rootId = id;
      const session = await client.query<{ id: string }>(
        "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
        [id],
      );
      return signToken({ sub: String(id), sid: session.rows[0]?.id ?? '' });
    }, database);
    auth = `Bearer ${token}`;
    t = await startApp({
      redisUrl: null,
      widgets: false,
      databaseUrl: url,
      env: { DB_POOL_SIZE: '1', CACHE_EPOCH_POLL_MS: '60000' },
    });
  });

  afterAll(async () => {
    await t.close().catch(() => undefined);
    await admin(async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await client.query(`DROP DATABASE IF EXISTS ${database}_away WITH (FORCE)`);
      await client.query(`DROP ROLE IF EXISTS ${role}`);
    });
  });

  const get = (path: string) => t.http().get(path).set('Authorization', auth);
  // A page the cache holds is served without the database (as it should be); each check asks
  // for a page never asked before, so it must reach the database.
  let uncached = 0;
  const uncachedDevices = () => `/v1/admin/devices?q=refused-${(uncached += 1)}`;

  /** Breaks the database one way, checks reads and writes answer 503 as the contract says, repairs it. */
  async function refused(breakIt: () => Promise<unknown>, repair: () => Promise<unknown>): Promise<void> {
    await get('/v1/admin/users').expect(200);
    await breakIt();
    await terminate();
    try {
      for (const response of [
        await get(uncachedDevices()),
        await t
          .http()
          .post('/v1/admin/devices')
          .set('Authorization', auth)
          .send({ serial_number: `SN-${tag}`, name: 'x' }),
      ]) {
        expect({ status: response.status, error: response.body.error as unknown }).toEqual({
          status: 503,
          error: {
            code: 'SERVICE_UNAVAILABLE',
            message: 'The database is unreachable; retry shortly',
            details: { dependency: 'database', reason: 'unreachable' },
          },
        });
        expect(response.headers['retry-after']).toBe('1');
        expect(response.headers['cache-control']).toBe('no-store');
        expect(response.headers['x-request-id']).toBe(response.body.meta.request_id);
      }
      const ready = await t.http().get('/health/ready').expect(503);
      expect(ready.body.error.details).toMatchObject({ dependency: 'database', database: 'down' });
    } finally {
      await repair();
    }
    await get(uncachedDevices()).expect(200);
  }

  it('55000: the database does not accept connections (ALLOW_CONNECTIONS false)', async () => {
    await refused(
      () => admin((client) => client.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS false`)),
      () => admin((client) => client.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS true`)),
    );
  });

  it('53300: too many connections (the role’s connection limit)', async () => {
    await refused(
      () => admin((client) => client.query(`ALTER ROLE ${role} CONNECTION LIMIT 0`)),
      () => admin((client) => client.query(`ALTER ROLE ${role} CONNECTION LIMIT -1`)),
    );
  });

  it('28000: the login is refused (NOLOGIN)', async () => {
    await refused(
      () => admin((client) => client.query(`ALTER ROLE ${role} NOLOGIN`)),
      () => admin((client) => client.query(`ALTER ROLE ${role} LOGIN`)),
    );
  });

  it('3D000: the database is gone (renamed away)', async () => {
    const rename = async (from: string, to: string): Promise<void> => {
      // Renaming needs the database idle: end the service's sessions until it is.
      for (let attempt = 0; ; attempt += 1) {
        await terminate();
        try {
          await admin((client) => client.query(`ALTER DATABASE ${from} RENAME TO ${to}`));
          return;
        } catch (error) {
          if (attempt > 20) throw error;
          await sleep(50);
        }
      }
    };
    await refused(
      () => rename(database, `${database}_away`),
      () => rename(`${database}_away`, database),
    );
  });

  it('the pool is exhausted: a request that cannot get a connection in time is 503, the held one completes', async () => {
    await get('/v1/admin/devices').expect(200);
    const locker = new pg.Client({ connectionString: urlOf(database) });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
      // Holds the pool's only connection, waiting for the lock (a detail read: one statement).
      const held = get(`/v1/admin/users/${rootId}`).then((response) => response);
      await sleep(200);
      const starved = await get(uncachedDevices());
      expect(starved.status).toBe(503);
      expect(starved.body.error.details).toEqual({ dependency: 'database', reason: 'unreachable' });
      await locker.query('ROLLBACK');
      expect((await held).status).toBe(200);
    } finally {
      await locker.end();
    }
  });
});
