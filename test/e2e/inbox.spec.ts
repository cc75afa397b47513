import { randomUUID } from 'node:crypto';
import { actor, createUser, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';

describe('inbox messages and read state (parts 6.7, 6.8)', () => {
  let t: TestApp;
  let root: { user: TestUser; auth: string };
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const api = () => caller(t, root);
  async function send(
    userId: number,
    extra: Record<string, unknown> = {},
  ): Promise<{ id: number; [key: string]: unknown }> {
    const response = await api()
      .post('/v1/admin/inbox', { user_id: userId, type: 'notice', title: 'Hello', body: 'World', ...extra })
      .expect(201);
    return response.body.data;
  }
  async function stateOf(messageId: number): Promise<number> {
    const [row] = await sql<{ id: number }>('SELECT id FROM message_read_state WHERE message_id = $1', [messageId]);
    return row?.id ?? 0;
  }
  const counts = async (userId: number, conversation?: string) =>
    (
      await api()
        .get(
          `/v1/admin/message-read-state/counts?user_id=${userId}${conversation === undefined ? '' : `&conversation_id=${conversation}`}`,
        )
        .expect(200)
    ).body;

  describe('messages', () => {
    it('creates a message with its read-state row in one transaction (201, Location, audit)', async () => {
      const user = await createUser();
      const message = await send(user.id, { conversation_id: 'c-1', data: { shift: 'night' } });
      expect(message).toMatchObject({
        user_id: user.id,
        conversation_id: 'c-1',
        type: 'notice',
        title: 'Hello',
        body: 'World',
        data: { shift: 'night' },
        last_pushed_at: null,
        is_deleted: false,
        created_by: root.user.id,
      });
      expect(
        await sql('SELECT user_id, conversation_id, is_read FROM message_read_state WHERE message_id = $1', [
          message.id,
        ]),
      ).toEqual([{ user_id: user.id, conversation_id: 'c-1', is_read: false }]);
      expect(
        await sql("SELECT action FROM audit_events WHERE resource_type = 'inbox_message' AND resource_id = $1", [
          String(message.id),
        ]),
      ).toEqual([{ action: 'inbox_message.create' }]);
    });

    it.each([
      [{ type: 'Bad-Type' }, 'type'],
      [{ title: '' }, 'title'],
      [{ body: 'x'.repeat(10_001) }, 'body'],
      [{ data: 'text' }, 'data'],
      [{ data: { blob: 'x'.repeat(17_000) } }, 'data'],
      [{ conversation_id: 'x'.repeat(65) }, 'conversation_id'],
      [{ last_pushed_at: '2026-01-01T00:00:00Z' }, 'last_pushed_at'],
    ])('400 for %j and nothing written', async (patch, field) => {
      const user = await createUser();
      const response = await api()
        .post('/v1/admin/inbox', { user_id: user.id, type: 'notice', title: 'T', body: 'B', ...patch })
        .expect(400);
      expect(response.body.error.details.fields[0].field).toBe(field);
      expect(await sql('SELECT count(*)::int AS n FROM inbox_messages WHERE user_id = $1', [user.id])).toEqual([
        { n: 0 },
      ]);
    });

    it('404 USER_NOT_FOUND for an unknown recipient', async () => {
      expect(
        (await api().post('/v1/admin/inbox', { user_id: 987654321, type: 'notice', title: 'T', body: 'B' }).expect(404))
          .body.error.code,
      ).toBe('USER_NOT_FOUND');
    });

    it('lists newest first with filters and q; PATCH, delete (200/204), restore (200/204)', async () => {
      const user = await createUser();
      const conversation = randomUUID().slice(0, 8);
      const first = await send(user.id, { conversation_id: conversation, title: 'Shift swap' });
      const second = await send(user.id, { type: 'alert', body: 'Door open' });
      const ids = async (query: string): Promise<number[]> =>
        (
          (await api().get(`/v1/admin/inbox?user_id=${user.id}&${query}`).expect(200)).body.data as { id: number }[]
        ).map((row) => row.id);
      expect(await ids('')).toEqual([second.id, first.id]);
      expect(await ids(`conversation_id=${conversation}`)).toEqual([first.id]);
      expect(await ids('type=alert')).toEqual([second.id]);
      expect(await ids('q=DOOR')).toEqual([second.id]);
      const patched = await api()
        .patch(`/v1/admin/inbox/${first.id}`, { title: 'Shift swap (updated)', data: null })
        .expect(200);
      expect(patched.body.data).toMatchObject({ title: 'Shift swap (updated)', data: null });
      expect(patched.headers.etag).toBe('"2"');
      await api().patch(`/v1/admin/inbox/${first.id}`, { user_id: 1 }).expect(400);
      expect((await api().delete(`/v1/admin/inbox/${first.id}`).expect(200)).body.data.is_deleted).toBe(true);
      await api().delete(`/v1/admin/inbox/${first.id}`).expect(204);
      expect(await ids('')).toEqual([second.id]);
      expect(await ids('include_deleted=true')).toEqual([second.id, first.id]);
      await api().get(`/v1/admin/inbox/${first.id}`).expect(404);
      expect((await api().post(`/v1/admin/inbox/${first.id}/restore`).expect(200)).body.data.is_deleted).toBe(false);
      await api().post(`/v1/admin/inbox/${first.id}/restore`).expect(204);
      expect((await api().get('/v1/admin/inbox/987654321').expect(404)).body.error).toMatchObject({
        code: 'MESSAGE_NOT_FOUND',
        details: { message_id: 987654321 },
      });
    });

    it('bulk-delete answers per item, dry_run writes nothing', async () => {
      const user = await createUser();
      const [a, b] = [await send(user.id), await send(user.id)];
      await api().delete(`/v1/admin/inbox/${b.id}`).expect(200);
      const items = [{ id: a.id }, { id: b.id }, { id: 987654321 }, { id: a.id }];
      const dry = await api().post('/v1/admin/inbox/bulk-delete', { items, dry_run: true }).expect(200);
      expect(dry.body.data.results.map((result: { status: string }) => result.status)).toEqual([
        'deleted',
        'already_deleted',
        'failed',
        'already_deleted',
      ]);
      expect(await sql('SELECT is_deleted FROM inbox_messages WHERE id = $1', [a.id])).toEqual([{ is_deleted: false }]);
      const real = await api().post('/v1/admin/inbox/bulk-delete', { items, reason: 'cleanup' }).expect(200);
      expect(real.body.data).toMatchObject({ accepted: 4, processed: 3, failed: 1 });
      expect(real.body.data.results[2]).toEqual({
        index: 2,
        id: 987654321,
        status: 'failed',
        error: { code: 'MESSAGE_NOT_FOUND', message: 'Message 987654321 does not exist' },
      });
      expect(await sql('SELECT is_deleted FROM inbox_messages WHERE id = $1', [a.id])).toEqual([{ is_deleted: true }]);
      expect(
        await sql("SELECT reason FROM audit_events WHERE action = 'inbox_message.delete' AND resource_id = $1", [
          String(a.id),
        ]),
      ).toEqual([{ reason: 'cleanup' }]);
      await api().post('/v1/admin/inbox/bulk-delete', { items: [] }).expect(400);
    });
  });

  describe('read state', () => {
    it('counts before and after every read-state action, never stale', async () => {
      const user = await createUser();
      const conversation = `c-${randomUUID().slice(0, 6)}`;
      const [m1, m2] = [await send(user.id, { conversation_id: conversation }), await send(user.id)];
      const [s1, s2] = [await stateOf(m1.id), await stateOf(m2.id)];
      expect((await counts(user.id)).data).toEqual({
        user_id: user.id,
        conversation_id: null,
        total: 2,
        unread: 2,
        archived: 0,
        pinned: 0,
        snoozed: 0,
      });
      expect((await counts(user.id)).meta.cache).toBe('hit');
      expect((await counts(user.id, conversation)).data).toMatchObject({
        conversation_id: conversation,
        total: 1,
        unread: 1,
      });

      const read = await api().post(`/v1/admin/message-read-state/${s1}/mark-read`).expect(200);
      expect(read.body.data).toMatchObject({ is_read: true, read_at: expect.any(String) });
      // The feed shows the read state as the API answered it (no internal fields).
      const [event] = await sql<{ data: Record<string, unknown> }>(
        "SELECT data FROM events WHERE type = 'message_read_state.mark_read' AND resource_id = $1",
        [String(s1)],
      );
      const { changes: _changes, ...shown } = event?.data ?? {};
      expect(shown).toEqual(read.body.data);
      expect((await counts(user.id)).data).toMatchObject({ total: 2, unread: 1 });
      expect((await counts(user.id, conversation)).data).toMatchObject({ unread: 0 });

      await api().post(`/v1/admin/message-read-state/${s2}/archive`, {}).expect(200);
      await api().post(`/v1/admin/message-read-state/${s2}/pin`, { pinned: true }).expect(200);
      expect((await counts(user.id)).data).toMatchObject({ archived: 1, pinned: 1 });
      const until = new Date(Date.now() + 3600_000).toISOString();
      const snoozed = await api().post(`/v1/admin/message-read-state/${s2}/snooze`, { until }).expect(200);
      expect(snoozed.body.data).toMatchObject({ snoozed_until: until, is_snoozed: true });
      expect((await counts(user.id)).data).toMatchObject({ snoozed: 1 });

      await api().post(`/v1/admin/message-read-state/${s1}/mark-read`, { read: false }).expect(200);
      await api().post(`/v1/admin/message-read-state/${s2}/archive`, { archived: false }).expect(200);
      await api().post(`/v1/admin/message-read-state/${s2}/pin`, { pinned: false }).expect(200);
      await api().post(`/v1/admin/message-read-state/${s2}/snooze`, { until: null }).expect(200);
      expect((await counts(user.id)).data).toEqual({
        user_id: user.id,
        conversation_id: null,
        total: 2,
        unread: 2,
        archived: 0,
        pinned: 0,
        snoozed: 0,
      });

      await api().delete(`/v1/admin/inbox/${m1.id}`).expect(200);
      expect((await counts(user.id)).data).toMatchObject({ total: 1 });
      expect((await counts(user.id, conversation)).data).toMatchObject({ total: 0 });
      await api().post(`/v1/admin/inbox/${m1.id}/restore`).expect(200);
      expect((await counts(user.id)).data).toMatchObject({ total: 2 });
      await send(user.id);
      expect((await counts(user.id)).data).toMatchObject({ total: 3, unread: 3 });
    });

    it('repeating a state changes nothing: same version, no audit event', async () => {
      const user = await createUser();
      const state = await stateOf((await send(user.id)).id);
      const first = await api().post(`/v1/admin/message-read-state/${state}/mark-read`).expect(200);
      const again = await api().post(`/v1/admin/message-read-state/${state}/mark-read`).expect(200);
      expect(again.headers.etag).toBe(first.headers.etag);
      expect(again.body.data.read_at).toBe(first.body.data.read_at);
      expect(
        await sql(
          "SELECT count(*)::int AS n FROM audit_events WHERE action = 'message_read_state.mark_read' AND resource_id = $1",
          [String(state)],
        ),
      ).toEqual([{ n: 1 }]);
      await api().post(`/v1/admin/message-read-state/${state}/pin`).set('If-Match', '"1"').expect(412);
    });

    it('snooze: 422 SNOOZE_UNTIL_INVALID for the past or more than 365 days ahead; 400 without until', async () => {
      const user = await createUser();
      const state = await stateOf((await send(user.id)).id);
      for (const until of [
        new Date(Date.now() - 1000).toISOString(),
        new Date(Date.now() + 366 * 86_400_000).toISOString(),
      ]) {
        expect(
          (await api().post(`/v1/admin/message-read-state/${state}/snooze`, { until }).expect(422)).body.error.code,
        ).toBe('SNOOZE_UNTIL_INVALID');
      }
      await api().post(`/v1/admin/message-read-state/${state}/snooze`, {}).expect(400);
      await api().post(`/v1/admin/message-read-state/${state}/snooze`, { until: 'tomorrow' }).expect(400);
    });

    it('hides rows of deleted messages from lists, details and actions (404 READ_STATE_NOT_FOUND)', async () => {
      const user = await createUser();
      const message = await send(user.id);
      const state = await stateOf(message.id);
      await api().get(`/v1/admin/message-read-state/${state}`).expect(200);
      expect(
        (await api().get(`/v1/admin/message-read-state?user_id=${user.id}`).expect(200)).body.data.map(
          (row: { id: number }) => row.id,
        ),
      ).toEqual([state]);
      await api().delete(`/v1/admin/inbox/${message.id}`).expect(200);
      expect((await api().get(`/v1/admin/message-read-state/${state}`).expect(404)).body.error).toMatchObject({
        code: 'READ_STATE_NOT_FOUND',
        details: { read_state_id: state },
      });
      await api().post(`/v1/admin/message-read-state/${state}/mark-read`).expect(404);
      expect((await api().get(`/v1/admin/message-read-state?user_id=${user.id}`).expect(200)).body.data).toEqual([]);
      await api().get(`/v1/admin/message-read-state?user_id=${user.id}&is_read=yes`).expect(400);
    });

    it('an operator may update read state but not delete messages', async () => {
      const operator = await actor('operator');
      const user = await createUser();
      const message = await send(user.id);
      await caller(t, operator)
        .post(`/v1/admin/message-read-state/${await stateOf(message.id)}/mark-read`)
        .expect(200);
      expect(
        (await caller(t, operator).delete(`/v1/admin/inbox/${message.id}`).expect(403)).body.error.details,
      ).toEqual({ permission: 'inbox.delete' });
    });
  });
});
