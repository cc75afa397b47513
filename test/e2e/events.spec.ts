import pg from 'pg';
import type supertest from 'supertest';
import { setTimeout as sleep } from 'node:timers/promises';
import { inBatches } from '../../src/platform/database/batches.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { EventsRepository } from '../../src/events/events.repository.js';
import { parseCursor } from '../../src/events/event-cursor.js';
import { loadSettings } from '../../src/platform/config/settings.js';
import { migrate } from '../../src/platform/database/migrate.js';
import { createOwnDatabase } from '../support/own-database.js';
import { actor, signToken, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql, sqlOn } from '../support/db.js';
import { caller } from '../support/requests.js';
import { testDatabaseUrl } from '../support/test-env.js';

interface FeedEvent {
  id: string;
  type: string;
  resource_type: string | null;
  resource_id: number | string | null;
  actor_id: number | null;
  data: { changes?: Record<string, unknown> };
}

/*
 * The event feed (part 6.12): every audit event is an event, read by cursor in commit order.
 */
describe('GET /events: the change feed', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  /** The feed from `after` to its current end. */
  async function readAll(
    after: string | undefined,
    types?: string,
  ): Promise<{ events: FeedEvent[]; next: string | null }> {
    const events: FeedEvent[] = [];
    let cursor = after;
    for (;;) {
      const query = new URLSearchParams({ limit: '1000' });
      if (cursor !== undefined) query.set('after', cursor);
      if (types !== undefined) query.set('types', types);
      const response = await caller(t, root).get(`/v1/admin/events?${query.toString()}`).expect(200);
      events.push(...(response.body.data as FeedEvent[]));
      const next = response.body.meta.next_after as string | null;
      if ((response.body.data as unknown[]).length === 0) return { events, next };
      cursor = next ?? undefined;
    }
  }

  it('a write is an event with its type, resource, actor and changes; next_after resumes after it', async () => {
    const { next: start } = await readAll(undefined);
    const email = `feed-${Date.now()}@example.com`;
    const created = await caller(t, root)
      .post('/v1/admin/users', { email, display_name: 'Feed', role_id: 4 })
      .expect(201);
    const userId = created.body.data.id as number;
    const response = await caller(t, root)
      .get(`/v1/admin/events?types=user.create&wait=10${start === null ? '' : `&after=${start}`}`)
      .expect(200);
    const event = (response.body.data as FeedEvent[]).find((item) => item.resource_id === userId);
    expect(event).toMatchObject({
      type: 'user.create',
      resource_type: 'user',
      resource_id: userId,
      actor_id: root.user.id,
      // The user as GET /users/{id} shows it after the write, plus what changed.
      data: expect.objectContaining({
        id: userId,
        email,
        display_name: 'Feed',
        role_id: 4,
        changes: expect.objectContaining({ email: [null, email] }),
      }),
    });
    // Exactly one event for the write (the upgrade-time trigger leaves the service's own alone)…
    expect(
      await sql("SELECT count(*)::int AS n FROM events WHERE type = 'user.create' AND resource_id = $1", [
        String(userId),
      ]),
    ).toEqual([{ n: 1 }]);
    // …while an instance of the previous version, writing the audit trail only, still feeds it.
    await sql(
      "INSERT INTO audit_events (action, resource_type, resource_id) VALUES ('test.legacy', 'test', 'legacy-1')",
    );
    expect(await sql("SELECT resource_id FROM events WHERE type = 'test.legacy'")).toEqual([
      { resource_id: 'legacy-1' },
    ]);
    const shown = await caller(t, root).get(`/v1/admin/users/${userId}`).expect(200);
    const { changes: _changes, ...resource } = event?.data ?? {};
    expect(resource).toEqual(shown.body.data);
    expect(event?.id).toMatch(/^\d{20}-\d{20}$/);
    // At or past the last event given (past it when the page was not full: the horizon).
    const last = (response.body.data as FeedEvent[]).at(-1)?.id ?? '';
    expect(response.body.meta.next_after >= last).toBe(true);
    // Nothing new after the cursor: an empty page never moves the cursor back.
    const again = await caller(t, root)
      .get(`/v1/admin/events?types=user.create&after=${response.body.meta.next_after}`)
      .expect(200);
    expect(again.body.data).toEqual([]);
    expect(again.body.meta.next_after >= response.body.meta.next_after).toBe(true);
  });

  it('a page that is not full moves the cursor to the horizon, and an event of a rare type written after it is still found', async () => {
    const empty = await caller(t, root).get('/v1/admin/events?types=test.rare').expect(200);
    expect(empty.body.data).toEqual([]);
    const cursor = empty.body.meta.next_after as string;
    expect(cursor).toMatch(/^\d{20}-\d{20}$/);
    await sql("INSERT INTO events (type, resource_type, resource_id) VALUES ('test.rare', 'test', 'rare-1')");
    const found = await caller(t, root).get(`/v1/admin/events?types=test.rare&after=${cursor}&wait=10`).expect(200);
    expect((found.body.data as FeedEvent[]).map((event) => event.resource_id)).toEqual(['rare-1']);
    // An empty after= (a stored null sent back) is the start of the feed.
    const fromStart = await caller(t, root).get('/v1/admin/events?types=test.rare&after=').expect(200);
    expect((fromStart.body.data as FeedEvent[]).map((event) => event.resource_id)).toEqual(['rare-1']);
  });

  it('wait long-polls until an event arrives', async () => {
    const { next } = await readAll(undefined);
    const started = Date.now();
    const waiting = caller(t, root).get(`/v1/admin/events?after=${next}&wait=20&types=user.create`);
    await sleep(500);
    const created = await caller(t, root)
      .post('/v1/admin/users', { email: `wait-${Date.now()}@example.com`, display_name: 'W', role_id: 4 })
      .expect(201);
    const response = await waiting.expect(200);
    // Other specs create users at the same time: the answer holds ours, and only user.create events.
    const events = response.body.data as FeedEvent[];
    expect(events.map((event) => String(event.resource_id))).toContain(String(created.body.data.id));
    expect(new Set(events.map((event) => event.type))).toEqual(new Set(['user.create']));
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('refuses bad cursors, limits, waits and types with the field named; refuses roles without events.read', async () => {
    for (const [query, field] of [
      ['after=12', 'after'],
      ['after=00000000000000000001-0000000000000000000x', 'after'],
      ['after=99999999999999999999-00000000000000000001', 'after'],
      ['after=00000000000000000001-99999999999999999999', 'after'],
      // A position this database has not reached: another database's cursor, or a restore.
      ['after=00000000099999999999-00000000000000000001', 'ahead'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['wait=31', 'wait'],
      ['types=DROP%20TABLE', 'types'],
    ] as const) {
      const response = await caller(t, root).get(`/v1/admin/events?${query}`).expect(400);
      expect(response.body.error).toMatchObject({ code: 'VALIDATION_FAILED' });
      expect(JSON.stringify(response.body.error.details)).toContain(field);
    }
    const viewer = await actor('viewer');
    const refused = await caller(t, viewer).get('/v1/admin/events').expect(403);
    expect(refused.body.error.code).toBe('PERMISSION_DENIED');
    const admin = await actor('admin');
    await caller(t, admin).get('/v1/admin/events?limit=1').expect(200);
  });

  it('many concurrent writers with random delays inside their transactions: a reader following the cursor sees every event once, in order, none behind it', async () => {
    const { next: start } = await readAll(undefined, 'test.concurrent');
    // A pause inside COMMIT, after the feed's commit step gave the transaction its position: a
    // deferred trigger queued after it. Without the commit lock another transaction would take the
    // next position and become visible first, and a reader would move past the earlier one.
    await sql(`CREATE TABLE IF NOT EXISTS test_commit_pause (ms int NOT NULL);
      CREATE OR REPLACE FUNCTION test_commit_pause() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep(NEW.ms / 1000.0); RETURN NULL; END $$;
      DROP TRIGGER IF EXISTS test_commit_pause ON test_commit_pause;
      CREATE CONSTRAINT TRIGGER test_commit_pause AFTER INSERT ON test_commit_pause
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_commit_pause()`);
    const writers = 8;
    const perWriter = 15;
    const written = new Set<string>();
    let writing = true;
    const writer = async (index: number): Promise<void> => {
      const client = new pg.Client({ connectionString: testDatabaseUrl() });
      await client.connect();
      try {
        for (let n = 0; n < perWriter; n += 1) {
          const marker = `${index}:${n}`;
          await client.query('BEGIN');
          // Take an id now, commit after a random delay: ids alone would not be commit order.
          await client.query(
            `INSERT INTO events (type, resource_type, resource_id) VALUES ('test.concurrent', 'test', $1)`,
            [marker],
          );
          await sleep(Math.random() * 60);
          await client.query('INSERT INTO test_commit_pause (ms) VALUES ($1)', [Math.floor(Math.random() * 30)]);
          if (Math.random() < 0.1) {
            await client.query('ROLLBACK');
            continue;
          }
          await client.query('COMMIT');
          written.add(marker);
        }
      } finally {
        await client.end();
      }
    };
    const seen: FeedEvent[] = [];
    let stopAt = Number.POSITIVE_INFINITY;
    const reader = (async () => {
      let cursor = start ?? undefined;
      // After the writers, read on until everything came or 10 s passed (a skipped event never comes).
      while (writing || (seen.length < written.size && Date.now() < stopAt)) {
        const query = new URLSearchParams({ types: 'test.concurrent', limit: '7', wait: '1' });
        if (cursor !== undefined) query.set('after', cursor);
        const response = await caller(t, root).get(`/v1/admin/events?${query.toString()}`).expect(200);
        seen.push(...(response.body.data as FeedEvent[]));
        cursor = (response.body.meta.next_after as string | null) ?? undefined;
      }
    })();
    await Promise.all(Array.from({ length: writers }, (_, index) => writer(index)));
    writing = false;
    stopAt = Date.now() + 10_000;
    await reader;
    // Every committed event exactly once, no rolled-back one, in strictly increasing id order.
    const markers = seen.map((event) => String(event.resource_id));
    expect(new Set(markers).size).toBe(markers.length);
    expect(new Set(markers)).toEqual(written);
    const ids = seen.map((event) => event.id);
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids).size).toBe(ids.length);
    // And reading the whole range again gives the very same sequence: nothing appeared behind.
    const { events: again } = await readAll(start ?? undefined, 'test.concurrent');
    expect(again.map((event) => event.id)).toEqual(ids);
  }, 60_000);

  it('the feed order cannot be forged: an INSERT naming its own transaction and position gets those of its commit', async () => {
    const [before] = await sql<{ top: string }>('SELECT max(seq)::text AS top FROM events');
    await sql(
      "INSERT INTO events (xid, seq, type, resource_type, resource_id) VALUES ('1', 1, 'test.forged', 'test', 'forged')",
    );
    const [row] = await sql<{ xid: string; seq: string }>(
      "SELECT xid::text AS xid, seq::text AS seq FROM events WHERE type = 'test.forged'",
    );
    expect(BigInt(row?.xid ?? '0')).toBeGreaterThan(1n);
    expect(BigInt(row?.seq ?? '0')).toBeGreaterThan(BigInt(before?.top ?? '0'));
    // No transaction is left waiting for its position.
    expect(await sql('SELECT count(*)::int AS n FROM event_transactions')).toEqual([{ n: 0 }]);
  });

  it('commit order, not first-write order: a transaction that wrote first but committed last comes last', async () => {
    const { next: start } = await readAll(undefined, 'test.order');
    const first = new pg.Client({ connectionString: testDatabaseUrl() });
    const second = new pg.Client({ connectionString: testDatabaseUrl() });
    await Promise.all([first.connect(), second.connect()]);
    const write = (client: pg.Client, step: string): Promise<unknown> =>
      client.query(
        "INSERT INTO events (type, resource_type, resource_id, data) VALUES ('test.order', 'test', 'record-1', $1)",
        [JSON.stringify({ changes: { step: [null, step] } })],
      );
    try {
      // The first session takes its transaction id and writes, the second writes and commits,
      // then the first writes again and commits: a consumer applying changes in feed order must
      // end with the first session's last change.
      await first.query('BEGIN');
      await write(first, 'first-1');
      await second.query('BEGIN');
      await write(second, 'second');
      await second.query('COMMIT');
      await write(first, 'first-2');
      await first.query('COMMIT');
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
    const { events } = await readAll(start ?? undefined, 'test.order');
    expect(events.map((event) => event.data.changes?.['step'])).toEqual([
      [null, 'second'],
      [null, 'first-1'],
      [null, 'first-2'],
    ]);
  });

  it('upgrading to commit order keeps every event id and stored cursor valid', async () => {
    const own = await createOwnDatabase('events_upgrade', { migrateUpTo: 'EventsOrder1764720000000' });
    const on = <T>(text: string, params: unknown[] = []): Promise<T[]> => sqlOn<T>(own.url, text, params);
    try {
      for (const marker of ['a', 'b', 'c'])
        await on("INSERT INTO events (type, resource_type, resource_id) VALUES ('test.upgrade', 'test', $1)", [marker]);
      // The ids and the horizon cursor the feed gave before the upgrade.
      const before = await on<{ id: string; resource_id: string }>(
        "SELECT lpad(xid::text, 20, '0') || '-' || lpad(id::text, 20, '0') AS id, resource_id FROM events ORDER BY xid, id",
      );
      const [horizon] = await on<{ cursor: string }>(
        "SELECT lpad((pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1)::text, 20, '0') || '-09223372036854775807' AS cursor",
      );
      await migrate(loadSettings({ DATABASE_URL: own.url }), own.url);
      const upgraded = await startApp({ widgets: false, databaseUrl: own.url });
      try {
        const events = upgraded.app.get(EventsRepository);
        const after = await events.after(undefined, undefined, 100);
        expect(after.rows.map((row) => row.id)).toEqual(before.map((row) => row.id));
        // A new event comes after every old one, and after the horizon a reader had stored.
        await on("INSERT INTO events (type, resource_type, resource_id) VALUES ('test.upgrade', 'test', 'd')");
        const next = await events.after(parseCursor(horizon?.cursor), undefined, 100);
        // The horizon is held back by any transaction open on the server (other runs, other
        // specs): a reader resuming from it gets the old events past it again, then the new one.
        const pastHorizon = before.filter((row) => row.id > (horizon?.cursor ?? '')).map((row) => row.resource_id);
        expect(next.rows.map((row) => row.resource_id)).toEqual([...pastHorizon, 'd']);
        expect((next.rows.at(-1)?.id ?? '') > (before.at(-1)?.id ?? 'z')).toBe(true);
      } finally {
        await upgraded.close();
      }
    } finally {
      await own.drop();
    }
  });
});

/*
 * Retention and the feed's lag (part 6.12), on a database of the spec's own: purging and the
 * commit lock are the whole feed's, and other specs write to the shared one all the time.
 */
describe('GET /events past retention, and /health/ready’s events.lag_seconds', () => {
  let own: { url: string; drop: () => Promise<void> };
  let t: TestApp;
  let auth: string;
  const on = <T>(text: string, params: unknown[] = []): Promise<T[]> => sqlOn<T>(own.url, text, params);
  beforeAll(async () => {
    own = await createOwnDatabase('events_retention');
    t = await startApp({ widgets: false, databaseUrl: own.url });
    const [user] = await on<{ id: number }>(
      "INSERT INTO users (email, display_name, role_id, status_id) VALUES ('feed-root@example.com', 'Root', 1, 2) RETURNING id",
    );
    const [session] = await on<{ id: string }>(
      "INSERT INTO auth_sessions (user_id, expires_at) VALUES ($1, now() + interval '1 hour') RETURNING id",
      [user?.id],
    );
    auth = `Bearer ${signToken({ sub: String(user?.id), sid: session?.id })}`;
  });
  afterAll(async () => {
    await t?.close();
    await own?.drop();
  });

  const feed = (query: string): supertest.Test => t.http().get(`/v1/admin/events?${query}`).set('Authorization', auth);
  const ids = (response: supertest.Response): string[] => (response.body.data as FeedEvent[]).map((event) => event.id);
  const purge = (): Promise<number> =>
    inBatches(t.app.get(UnitOfWork), (tx) => t.app.get(EventsRepository).purge(tx, 30, 1));
  const BEGINNING = `${'0'.repeat(20)}-${'0'.repeat(20)}`;

  /** One event per transaction (each its own feed position), `days` old. */
  async function write(marker: string, days: number): Promise<string> {
    await on(
      "INSERT INTO events (type, occurred_at, resource_type, resource_id) VALUES ('test.retention', now() - make_interval(days => $1), 'test', $2)",
      [days, marker],
    );
    const [row] = await on<{ id: string }>(
      "SELECT lpad(seq::text, 20, '0') || '-' || lpad(id::text, 20, '0') AS id FROM events WHERE resource_id = $1",
      [marker],
    );
    return row?.id ?? '';
  }

  it('while nothing was ever purged, a cursor at the very beginning reads on, even on an empty feed', async () => {
    expect((await feed(`after=${BEGINNING}`).expect(200)).body.data).toEqual([]);
    expect(await purge()).toBe(0);
    expect((await feed(`after=${BEGINNING}`).expect(200)).body.data).toEqual([]);
  });

  it('a cursor before purged events is 410 EVENT_CURSOR_EXPIRED with oldest_after, from which nothing still kept is missed', async () => {
    // In feed order: two events past retention, a young one, one past retention behind it (its
    // transaction began long before it committed) and another young one.
    const [old1, old2, young1, lateOld, young2] = [
      await write('old-1', 31),
      await write('old-2', 31),
      await write('young-1', 29),
      await write('late-old', 31),
      await write('young-2', 1),
    ];
    expect(ids(await feed(`after=${BEGINNING}`).expect(200))).toEqual([old1, old2, young1, lateOld, young2]);

    // Purged from the feed's start up to its first younger event, no further.
    expect(await purge()).toBe(2);
    for (const query of [`after=${old1}`, `after=${BEGINNING}`, `after=${old1}&types=test.retention&wait=1`]) {
      const expired = await feed(query).expect(410);
      expect(expired.body).toMatchObject({
        success: false,
        error: { code: 'EVENT_CURSOR_EXPIRED', details: { oldest_after: old2 } },
      });
    }
    // oldest_after is in the form of an event id, just before the oldest event kept.
    expect(ids(await feed(`after=${old2}`).expect(200))).toEqual([young1, lateOld, young2]);
    expect(ids(await feed('').expect(200))).toEqual([young1, lateOld, young2]);
    expect(ids(await feed(`after=${young1}`).expect(200))).toEqual([lateOld, young2]);

    // Once everything is past retention the feed is empty, and a cursor before the purge still hears of it.
    await on("UPDATE events SET occurred_at = now() - interval '40 days'");
    expect(await purge()).toBe(3);
    const emptied = await feed(`after=${old2}`).expect(410);
    expect(emptied.body.error.details).toEqual({ oldest_after: young2 });
    const caughtUp = await feed(`after=${young2}`).expect(200);
    expect(caughtUp.body.data).toEqual([]);
    expect(caughtUp.body.meta.next_after).toBe(young2);
  });

  it('reports the age of the transaction holding the feed back while it does, and 0 otherwise', async () => {
    const lag = async (): Promise<number> =>
      (await t.http().get('/health/ready').expect(200)).body.data.events.lag_seconds as number;
    expect(await lag()).toBe(0);
    const writer = new pg.Client({ connectionString: own.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query("INSERT INTO events (type, resource_type, resource_id) VALUES ('test.lag', 'test', 'held')");
      // Writing alone holds nothing back: the transaction takes its feed position only as it commits.
      expect(await lag()).toBe(0);
      // Its commit step now (the deferred trigger), then it stays open: it holds the feed's commit
      // lock, and no event committed after it can be read until it is visible.
      await writer.query('SET CONSTRAINTS event_transactions_commit IMMEDIATE');
      const until = Date.now() + 10_000;
      let held = await lag();
      while (held <= 0 && Date.now() < until) {
        await sleep(50);
        held = await lag();
      }
      expect(held).toBeGreaterThan(0);
      await writer.query('COMMIT');
    } finally {
      await writer.end();
    }
    expect(await lag()).toBe(0);
    expect(ids(await feed('types=test.lag').expect(200))).toHaveLength(1);
  });
});
