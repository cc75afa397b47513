import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { DEFERRED_EVENTS_QUEUE, DeferredAccessEvents } from '../../src/access-model/deferred-access-events.js';
import { startApp, type TestApp } from '../support/app.js';
import { actor, permissionId, type Caller } from '../support/auth.js';
import { sql } from '../support/db.js';
import { testDatabaseUrl } from '../support/test-env.js';
import { unique } from '../support/groups.js';
import { jobsSchema } from '../support/jobs.js';
import { caller } from '../support/requests.js';
import { testCachePrefix } from '../support/test-env.js';

/**
 * Part 6.17: a write through a group whose access changes exceed 1 000 answers at once; its
 * events are appended after the commit by a job (queued with the write; the job's handler is
 * `DeferredAccessEvents.drain`, run here by the test), each with the write's event as cause, none lost
 * or repeated, and the write's own event says how many were deferred. Its preview lists 1 000 and
 * counts them all.
 */

const CODE = 'audit.read';

/** The feed events a request committed, in feed order. */
const eventsOf = (requestId: string) =>
  sql<{ id: string; type: string; user_id: string; cause: string | null; deferred: string | null }>(
    `SELECT lpad(seq::text, 20, '0') || '-' || lpad(id::text, 20, '0') AS id, type, data->>'user_id' AS user_id,
            data->>'cause' AS cause, data->>'access_changes_deferred' AS deferred
     FROM events WHERE request_id = $1 AND seq IS NOT NULL ORDER BY seq, id`,
    [requestId],
  );

describe('access events of large fan-outs, appended by a job', () => {
  let a: TestApp;
  let b: TestApp;
  let root: Caller;
  const schema = jobsSchema();
  beforeAll(async () => {
    // No job workers: the test runs the job's work itself once the write has answered (a gate, not
    // a wait on the clock), after checking the write queued it.
    const env = { JOBS_SCHEMA: schema, JOB_WORKERS: 'false' };
    [a, b] = await Promise.all([
      startApp({ widgets: false, cachePrefix: testCachePrefix('deferred-a'), env }),
      startApp({ widgets: false, cachePrefix: testCachePrefix('deferred-b'), env }),
    ]);
    root = await actor('super_admin');
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  /** A group of `size` fresh viewers (written in SQL: the fan-out, not the setup, is under test). */
  async function bigGroup(size: number): Promise<{ group: number; users: number[] }> {
    const group = (
      await caller(a, root)
        .post('/v1/admin/groups', { name: unique('fan-out') })
        .expect(201)
    ).body.data.id as number;
    const tag = randomUUID().slice(0, 8);
    const users = await sql<{ id: string }>(
      `INSERT INTO users (email, display_name, role_id, status_id)
       SELECT 'fan-' || $1 || '-' || i || '@example.com', 'fan-out', 4, 2 FROM generate_series(1, $2) i RETURNING id`,
      [tag, size],
    );
    const ids = users.map((row) => Number(row.id));
    await sql(
      'INSERT INTO group_memberships (group_id, user_id, added_by) SELECT $1, u, $3 FROM unnest($2::bigint[]) u',
      [group, ids, root.user.id],
    );
    return { group, users: ids };
  }

  it('a grant to a group of 1 001: the preview lists 1 000 of 1 001; the write answers, then every event follows once, caused by it', async () => {
    const { group, users } = await bigGroup(1001);
    const body = { group_id: group, permission_id: permissionId(CODE) };
    const preview = await caller(a, root).post('/v1/admin/permission-grants/grant?dry_run=true', body).expect(200);
    expect(preview.body.data.access_changes).toHaveLength(1000);
    expect(preview.body.data.access_changes_total).toBe(1001);
    expect(preview.body.data.access_changes[0]).toMatchObject({ change: 'gained', group_id: group });

    const requestId = `fan-out-${randomUUID()}`;
    const written = await caller(a, root)
      .post('/v1/admin/permission-grants/grant', body)
      .set('X-Request-Id', requestId)
      .expect(201);
    const [own] = (await eventsOf(requestId)).filter((event) => !event.type.startsWith('access.'));
    expect(own).toMatchObject({ type: 'permission_grant.grant', deferred: '1001' });
    // Nothing yet but the write's own event; its job waits in the queue, written with it.
    expect((await eventsOf(requestId)).filter((event) => event.type.startsWith('access.'))).toEqual([]);
    const queued = await sql(`SELECT 1 FROM ${schema}.job WHERE name = $1 AND state = 'created'`, [
      DEFERRED_EVENTS_QUEUE,
    ]);
    expect(queued).toHaveLength(1);
    expect(await b.app.get(DeferredAccessEvents).drain()).toBe(1001);
    const access = (await eventsOf(requestId)).filter((event) => event.type.startsWith('access.'));
    expect(access).toHaveLength(1001);
    expect(new Set(access.map((event) => Number(event.user_id)))).toEqual(new Set(users));
    expect(new Set(access.map((event) => event.cause))).toEqual(new Set([own?.id]));
    expect(access.every((event) => event.type === 'access.gained')).toBe(true);
    expect(await sql('SELECT 1 FROM access_event_deferrals')).toEqual([]);
    // The right itself took effect with the response: a member is allowed at once.
    const check = await caller(b, root)
      .get(`/v1/admin/authz/check?user_id=${users[500]}&permission=${CODE}`)
      .expect(200);
    expect(check.body.data).toMatchObject({ allowed: true, group_id: group, grant_id: written.body.data.id });
  });
});

describe('deferred access events: a worker that dies mid-way, two instances at once', () => {
  let c: TestApp;
  let d: TestApp;
  let root: Caller;
  beforeAll(async () => {
    // No job workers: only the drains the test makes run (the job waits in a schema of its own).
    const env = { JOBS_SCHEMA: jobsSchema(), JOB_WORKERS: 'false' };
    [c, d] = await Promise.all([
      startApp({ widgets: false, cachePrefix: testCachePrefix('deferred-c'), env }),
      startApp({ widgets: false, cachePrefix: testCachePrefix('deferred-d'), env }),
    ]);
    root = await actor('super_admin');
  });
  afterAll(() => Promise.all([c.close(), d.close()]));

  it('a chunk held by a worker that dies is left to the others and appended once it is let go; two instances draining never append a chunk twice', async () => {
    const group = (
      await caller(c, root)
        .post('/v1/admin/groups', { name: unique('fan-out') })
        .expect(201)
    ).body.data.id as number;
    const tag = randomUUID().slice(0, 8);
    await sql(
      `WITH made AS (INSERT INTO users (email, display_name, role_id, status_id)
         SELECT 'fan-' || $1 || '-' || i || '@example.com', 'fan-out', 4, 2 FROM generate_series(1, 2500) i RETURNING id)
       INSERT INTO group_memberships (group_id, user_id, added_by) SELECT $2, id, $3 FROM made`,
      [tag, group, root.user.id],
    );
    const requestId = `fan-out-${randomUUID()}`;
    await caller(c, root)
      .post('/v1/admin/permission-grants/grant', { group_id: group, permission_id: permissionId(CODE) })
      .set('X-Request-Id', requestId)
      .expect(201);
    const accessEvents = async () =>
      (await eventsOf(requestId)).filter((event) => event.type.startsWith('access.')).length;
    // A worker takes a chunk and hangs (another instance's sweep may have taken one first: any
    // chunk it holds will do).
    const worker = new pg.Client({ connectionString: testDatabaseUrl() });
    await worker.connect();
    try {
      await worker.query('BEGIN');
      const [chunk] = (
        await worker.query<{ n: number }>(
          `SELECT (SELECT sum(coalesce(jsonb_array_length(item->'users'), 1))::int FROM jsonb_array_elements(changes) item) AS n
           FROM access_event_deferrals
           WHERE xid = (SELECT xid FROM events WHERE request_id = $1 LIMIT 1) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`,
          [requestId],
        )
      ).rows;
      const held = chunk?.n ?? 0;
      await Promise.all([c.app.get(DeferredAccessEvents).drain(), d.app.get(DeferredAccessEvents).drain()]);
      expect(await accessEvents()).toBe(2500 - held);
      // It dies: its transaction ends uncommitted, and the chunk is there for the next drain.
    } finally {
      await worker.query('ROLLBACK');
      await worker.end();
    }
    await Promise.all([c.app.get(DeferredAccessEvents).drain(), d.app.get(DeferredAccessEvents).drain()]);
    const access = (await eventsOf(requestId)).filter((event) => event.type.startsWith('access.'));
    expect(access).toHaveLength(2500);
    expect(new Set(access.map((event) => event.user_id)).size).toBe(2500);
  });
});
