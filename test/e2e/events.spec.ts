import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { UnitOfWork } from '../../src/database/unit-of-work.js';
import { EventsRepository } from '../../src/events/events.repository.js';
import { actor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
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
      data: { changes: expect.objectContaining({ email: [null, email] }) },
    });
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
    await sql("INSERT INTO audit_events (action, resource_type, resource_id) VALUES ('test.rare', 'test', 'rare-1')");
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
    await caller(t, root)
      .post('/v1/admin/users', { email: `wait-${Date.now()}@example.com`, display_name: 'W', role_id: 4 })
      .expect(201);
    const response = await waiting.expect(200);
    expect((response.body.data as FeedEvent[]).map((event) => event.type)).toEqual(['user.create']);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('refuses bad cursors, limits, waits and types with the field named; refuses roles without events.read', async () => {
    for (const [query, field] of [
      ['after=12', 'after'],
      ['after=00000000000000000001-0000000000000000000x', 'after'],
      ['after=99999999999999999999-00000000000000000001', 'after'],
      ['after=00000000000000000001-99999999999999999999', 'after'],
      // A transaction id this database has not reached: another database's cursor, or a restore.
      ['after=18000000000000000000-00000000000000000001', 'ahead'],
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
            `INSERT INTO audit_events (action, resource_type, resource_id, changes) VALUES ('test.concurrent', 'test', $1, '{}')`,
            [marker],
          );
          await sleep(Math.random() * 60);
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

  it('the feed order cannot be forged: an INSERT naming its own xid gets the writing transaction’s', async () => {
    await sql(
      "INSERT INTO events (xid, type, resource_type, resource_id) VALUES ('1', 'test.forged', 'test', 'forged')",
    );
    const [row] = await sql<{ xid: string }>("SELECT xid::text AS xid FROM events WHERE type = 'test.forged'");
    expect(BigInt(row?.xid ?? '0')).toBeGreaterThan(1n);
  });

  it('events past EVENT_RETENTION_DAYS are purged; younger ones stay', async () => {
    await sql(
      `INSERT INTO events (type, occurred_at, resource_type, resource_id) VALUES
       ('test.old', now() - interval '31 days', 'test', 'old'), ('test.old', now() - interval '29 days', 'test', 'young')`,
    );
    // In batches (here of one): each call takes at most that many, until none is left.
    const purge = (): Promise<number> =>
      t.app.get(UnitOfWork).run((tx) => t.app.get(EventsRepository).purge(tx, 30, 1));
    expect(await purge()).toBe(1);
    expect(await sql("SELECT count(*)::int AS n FROM events WHERE occurred_at < now() - interval '30 days'")).toEqual([
      { n: 0 },
    ]);
    expect(await purge()).toBe(0);
    expect(await sql("SELECT resource_id FROM events WHERE type = 'test.old' ORDER BY resource_id")).toEqual([
      { resource_id: 'young' },
    ]);
  });
});
