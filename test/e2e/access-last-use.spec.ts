import pg from 'pg';
import { AccessUses } from '../../src/access-model/access-uses.js';
import { accessWorld } from '../support/access-requests.js';
import { actor, createUser, permissionId, tokenFor } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { testCachePrefix, testDatabaseUrl } from '../support/test-env.js';

interface Way {
  decided_by: string;
  authority_id: number | null;
  grant_id: number | null;
  last_used_at: string | null;
}

/**
 * Last use of revocable paths (part 6.16): the guard notes each request allowed through a grant or
 * an authority permission, at most once a minute per path on an instance; the notes are written
 * in batches by a timer (flushed by hand here), and the access questions show them.
 */
describe('last use of grants and authority permissions', () => {
  let t: TestApp;
  let uses: AccessUses;

  beforeAll(async () => {
    // A short statement timeout: the failing batch below waits on a lock until it is cancelled.
    const env = { DB_STATEMENT_TIMEOUT_MS: '2000' };
    t = await startApp({ widgets: false, cachePrefix: testCachePrefix('access-last-use'), env });
    uses = t.app.get(AccessUses);
  });
  afterAll(() => t.close());

  const health = async () => (await t.http().get('/health/ready').expect(200)).body.data.access_uses;
  const usesOf = (kind: 'g' | 'a', id: number) =>
    sql<{ last_used_at: Date }>('SELECT last_used_at FROM access_path_uses WHERE kind = $1 AND path_id = $2', [
      kind,
      id,
    ]);

  it('a request allowed through an authority permission is recorded once a minute, and shown in allowed_by', async () => {
    const world = await accessWorld(['authorities.read']);
    const [held] = await sql<{ id: string }>('SELECT id FROM authority_permissions WHERE authority_id = $1', [
      world.authority,
    ]);
    const root = await actor('super_admin');
    const question = `/v1/admin/devices/${world.device}/access?permission=authorities.read&via=authority_permission`;
    const before = await t.http().get(question).set('Authorization', root.auth).expect(200);
    expect((before.body.data[0].allowed_by as Way[]).map((way) => way.last_used_at)).toEqual([null]);

    const noted = (await health()).noted;
    for (let read = 0; read < 3; read += 1)
      await t
        .http()
        .get(`/v1/admin/authorities/${world.authority}`)
        .set('Authorization', world.operator.auth)
        .expect(200);
    // Three requests, one note: the path is noted once a minute on this instance.
    expect((await health()).noted).toBe(noted + 1);
    expect(await usesOf('a', Number(held?.id))).toEqual([]);
    await uses.flush();
    const [recorded] = await usesOf('a', Number(held?.id));
    // A use of this path, after it was granted.
    const [granted] = await sql<{ granted_at: Date }>('SELECT granted_at FROM authority_permissions WHERE id = $1', [
      Number(held?.id),
    ]);
    expect(recorded?.last_used_at.getTime()).toBeGreaterThanOrEqual(granted?.granted_at.getTime() ?? Infinity);

    // The question's cached page is read again once a use was recorded.
    const after = await t.http().get(question).set('Authorization', root.auth).expect(200);
    const [way] = after.body.data[0].allowed_by as Way[];
    expect(way).toMatchObject({ decided_by: 'authority_permission', authority_id: world.authority });
    expect(way?.last_used_at).toBe(recorded?.last_used_at.toISOString());
    const where = await t
      .http()
      .get(`/v1/admin/users/${world.operator.user.id}/access?permission=authorities.read`)
      .set('Authorization', root.auth)
      .expect(200);
    expect(where.body.data[0].allowed_by[0].last_used_at).toBe(recorded?.last_used_at.toISOString());
  });

  it('a grant-allowed request is recorded against its grant; a role-allowed one records nothing', async () => {
    const root = await actor('super_admin');
    const viewer = await createUser({ role: 'viewer' });
    const granted = await t
      .http()
      .post('/v1/admin/permission-grants/grant')
      .set('Authorization', root.auth)
      .send({ user_id: viewer.id, permission_id: permissionId('audit.read') })
      .expect(201);
    const token = await tokenFor(viewer);
    const noted = (await health()).noted;
    await t.http().get('/v1/admin/audit-events?page_size=1').set('Authorization', `Bearer ${token}`).expect(200);
    // By role: users.read is the viewer's own, and the super admin's everything.
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', `Bearer ${token}`).expect(200);
    await t.http().get('/v1/admin/audit-events?page_size=1').set('Authorization', root.auth).expect(200);
    expect((await health()).noted).toBe(noted + 1);
    await uses.flush();
    expect(await usesOf('g', granted.body.data.id as number)).toHaveLength(1);
  });

  it('a recording that fails drops its batch, is counted, and never fails or holds a request', async () => {
    const world = await accessWorld(['devices.read']);
    const lock = new pg.Client({ connectionString: testDatabaseUrl() });
    await lock.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE access_path_uses IN ACCESS EXCLUSIVE MODE');
      const before = await health();
      // The request is answered while the table it would record into is locked.
      await t.http().get(`/v1/admin/devices/${world.device}`).set('Authorization', world.operator.auth).expect(200);
      // The batch waits for the lock until the statement timeout cancels it.
      await uses.flush();
      const after = await health();
      expect(after.dropped).toBe(before.dropped + 1);
      expect(after.failed_flushes).toBe(before.failed_flushes + 1);
      await t.http().get(`/v1/admin/devices/${world.device}`).set('Authorization', world.operator.auth).expect(200);
    } finally {
      await lock.query('ROLLBACK');
      await lock.end();
    }
  });
});
