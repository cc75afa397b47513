import { randomUUID } from 'node:crypto';
import { ROLE, USER_STATUS } from '../../src/platform/auth/roles.js';
import { loadSettings } from '../../src/platform/config/settings.js';
import { migrate } from '../../src/platform/database/migrate.js';
import { startApp, type TestApp } from '../support/app.js';
import { signToken } from '../support/auth.js';
import { sqlOn } from '../support/db.js';
import { PrimaryWithReplica } from '../support/pg-replica.mjs';
import { withRawRedis } from '../support/redis-raw.js';
import { TEST_REDIS_URL, testCachePrefix } from '../support/test-env.js';

interface Device {
  id: number;
  name: string;
}

interface ReplicaStatus {
  name: string;
  state: 'up' | 'lagging' | 'down';
  reads: number;
  skipped: number;
}

/** Part 12: misses read from a replica, never one that has not replayed a write already answered. */
describe('read replicas (DATABASE_READ_URLS) against a streaming replica of our own', () => {
  let servers: PrimaryWithReplica;
  let a: TestApp;
  let b: TestApp;
  const tag = `rr-${randomUUID().slice(0, 8)}`;

  const replicaStatus = async (t: TestApp): Promise<ReplicaStatus> =>
    ((await t.http().get('/health/ready').expect(200)).body.data.read_replicas as ReplicaStatus[])[0] ?? {
      name: '',
      state: 'down',
      reads: -1,
      skipped: -1,
    };
  let auth = '';
  const list = async (t: TestApp): Promise<Device[]> =>
    (await t.http().get(`/v1/admin/devices?q=${tag}&page_size=100&sort=id:asc`).set('Authorization', auth).expect(200))
      .body.data as Device[];
  let made = 0;
  const create = async (t: TestApp): Promise<Device> => {
    made += 1;
    const body = { serial_number: `${tag}-${made}`, name: `${tag} device ${made}` };
    return (await t.http().post('/v1/admin/devices').set('Authorization', auth).send(body).expect(201)).body
      .data as Device;
  };
  const rename = async (t: TestApp, id: number, name: string): Promise<void> => {
    await t.http().patch(`/v1/admin/devices/${id}`).set('Authorization', auth).send({ name }).expect(200);
  };
  /** What the replica itself holds, asked directly. */
  const onReplica = async (id: number): Promise<string | undefined> =>
    (await sqlOn<{ name: string }>(servers.url('app', 'replica'), 'SELECT name FROM devices WHERE id = $1', [id]))[0]
      ?.name;

  beforeAll(async () => {
    servers = await PrimaryWithReplica.start();
    await servers.createDatabase('app');
    const primary = servers.url('app', 'primary');
    await migrate(loadSettings({ DATABASE_URL: primary }), primary);
    const [root] = await sqlOn<{ id: number }>(
      primary,
      'INSERT INTO users (email, display_name, role_id, status_id) VALUES ($1, $2, $3, $4) RETURNING id',
      [`${tag}@example.com`, 'Replica root', ROLE.super_admin, USER_STATUS.active],
    );
    const [session] = await sqlOn<{ id: string }>(
      primary,
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
      [root?.id],
    );
    auth = `Bearer ${signToken({ sub: String(root?.id), sid: session?.id })}`;
    await servers.waitForReplica();
    // Two instances on one Redis (a prefix of their own); list pages are not cached, so every
    // list read is a database read.
    const start = (): Promise<TestApp> =>
      startApp({
        databaseUrl: primary,
        cachePrefix: testCachePrefix('read-replicas'),
        widgets: false,
        env: {
          DATABASE_READ_URLS: servers.url('app', 'replica'),
          LIST_CACHE: 'false',
          RATE_LIMIT_PER_MINUTE: '1000000',
        },
      });
    [a, b] = await Promise.all([start(), start()]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await servers?.stop();
  }, 60_000);

  it('a replica that has caught up serves the reads of misses', async () => {
    const created = [await create(a), await create(a)];
    await servers.waitForReplica();
    const before = await replicaStatus(b);
    let after = before;
    // Five reads, then more if some went to the primary (some WAL, autovacuum's, just flushed; or
    // a first connection slower than the replica's 1 s on a loaded machine).
    for (let n = 0; n < 40 && (n < 5 || after.reads - before.reads < 3); n += 1) {
      expect((await list(b)).map((device) => device.id)).toEqual(created.map((d) => d.id));
      after = await replicaStatus(b);
      if (n >= 5) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(after).toMatchObject({ name: `127.0.0.1:${servers.replicaPort}/app`, state: 'up' });
    expect(after.reads - before.reads).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('with its replay paused, every read on either instance is still fresh (from the primary), then the replica serves again once resumed', async () => {
    const [first] = await list(a);
    if (first === undefined) throw new Error('no device from the test before');
    await servers.pauseReplay();
    try {
      await rename(a, first.id, 'Renamed while the replica waits');
      const added = await create(a);
      // The replica really is behind: it has neither write.
      expect(await onReplica(first.id)).toBe(first.name);
      expect(await onReplica(added.id)).toBeUndefined();

      const before = await Promise.all([replicaStatus(a), replicaStatus(b)]);
      for (const t of [a, b]) {
        const rows = await list(t);
        expect(rows.find((device) => device.id === first.id)?.name).toBe('Renamed while the replica waits');
        expect(rows.map((device) => device.id)).toContain(added.id);
      }
      // A detail read that misses (its entry dropped behind the service's back): read fresh all the same.
      await withRawRedis(TEST_REDIS_URL, async (redis) =>
        redis.del(await redis.entryKey(testCachePrefix('read-replicas'), `res:device:${added.id}`)),
      );
      const detail = await b.http().get(`/v1/admin/devices/${added.id}`).set('Authorization', auth).expect(200);
      expect({ id: detail.body.data.id as number, cache: detail.body.meta.cache as string }).toEqual({
        id: added.id,
        cache: 'miss',
      });
      const after = await Promise.all([replicaStatus(a), replicaStatus(b)]);
      after.forEach((status, index) => {
        // Lagging; or down, when a connection to it took longer than its 1 s on a loaded machine.
        expect(['lagging', 'down']).toContain(status.state);
        expect(status.reads).toBe(before[index]?.reads);
        expect(status.skipped).toBeGreaterThan(before[index]?.skipped ?? 0);
      });
    } finally {
      await servers.resumeReplay();
    }
    await servers.waitForReplica();
    // Reads go back to the replica (at once, or after the 5 s a replica judged down is left alone).
    const before = await replicaStatus(b);
    let after = before;
    for (let n = 0; n < 60 && after.reads - before.reads < 3; n += 1) {
      const rows = await list(b);
      expect(rows.find((device) => device.id === first.id)?.name).toBe('Renamed while the replica waits');
      after = await replicaStatus(b);
      if (after.reads - before.reads < 3) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(after.state).toBe('up');
    expect(after.reads - before.reads).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('a replica that goes down is skipped: reads answer from the primary', async () => {
    await servers.stopReplica();
    try {
      const added = await create(a);
      expect((await list(b)).map((device) => device.id)).toContain(added.id);
      expect((await list(b)).map((device) => device.id)).toContain(added.id);
      expect(await replicaStatus(b)).toMatchObject({ state: 'down' });
    } finally {
      await servers.startReplica();
    }
  });
});
