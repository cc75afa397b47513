import jwt from 'jsonwebtoken';
import { randomUUID } from 'node:crypto';
import { actor, createUser, type TestUser } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { startFakeFcm } from '../support/fake-fcm.js';
import { jobsSchema, waitForJob } from '../support/jobs.js';
import { caller } from '../support/requests.js';

const token = (prefix = 'tok'): string => `${prefix}-${randomUUID()}`;

async function registerDevice(t: TestApp, auth: string, userId: number, pushToken: string): Promise<number> {
  const response = await t
    .http()
    .post('/v1/admin/mobile-devices')
    .set('Authorization', auth)
    .send({
      user_id: userId,
      platform: 'android',
      push_token: pushToken,
      app_version: '3.2.1',
      device_model: 'Pixel 9',
    })
    .expect(201);
  return response.body.data.id as number;
}

async function sendMessage(t: TestApp, auth: string, userId: number): Promise<number> {
  const response = await t
    .http()
    .post('/v1/admin/inbox')
    .set('Authorization', auth)
    .send({ user_id: userId, type: 'alert', title: 'Door open', body: 'Front door is open', conversation_id: 'site-7' })
    .expect(201);
  return response.body.data.id as number;
}

describe('mobile devices (part 6.9)', () => {
  let t: TestApp;
  let root: { user: TestUser; auth: string };
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('registers (201) without ever returning the token, and refuses a taken token (409)', async () => {
    const user = await createUser();
    const pushToken = token();
    const created = await caller(t, root)
      .post('/v1/admin/mobile-devices', { user_id: user.id, platform: 'ios', push_token: pushToken })
      .expect(201);
    expect(created.body.data).toMatchObject({
      user_id: user.id,
      platform: 'ios',
      push_token_hint: pushToken.slice(-6),
      is_active: true,
      deactivated_at: null,
      token_refreshed_at: null,
    });
    expect(JSON.stringify(created.body)).not.toContain(pushToken);
    expect(
      JSON.stringify((await caller(t, root).get(`/v1/admin/mobile-devices/${created.body.data.id}`).expect(200)).body),
    ).not.toContain(pushToken);
    expect(
      JSON.stringify(
        await sql('SELECT changes FROM audit_events WHERE resource_type = $1 AND resource_id = $2', [
          'mobile_device',
          String(created.body.data.id),
        ]),
      ),
    ).not.toContain(pushToken);
    const taken = await caller(t, root)
      .post('/v1/admin/mobile-devices', { user_id: user.id, platform: 'web', push_token: pushToken })
      .expect(409);
    expect(taken.body.error.code).toBe('MOBILE_DEVICE_TOKEN_TAKEN');
    expect(
      (
        await caller(t, root)
          .post('/v1/admin/mobile-devices', { user_id: 987654321, platform: 'ios', push_token: token() })
          .expect(404)
      ).body.error.code,
    ).toBe('USER_NOT_FOUND');
    expect(
      (
        await caller(t, root)
          .post('/v1/admin/mobile-devices', { user_id: user.id, platform: 'symbian', push_token: token() })
          .expect(400)
      ).body.error.details.fields[0].field,
    ).toBe('platform');
    expect(
      (await caller(t, root).get(`/v1/admin/mobile-devices?user_id=${user.id}&platform=ios`).expect(200)).body.meta
        .total,
    ).toBe(1);
  });

  it('deactivate (then 409), refresh-token keeps a manually deactivated device inactive but revives an unregistered one', async () => {
    const user = await createUser();
    const id = await registerDevice(t, root.auth, user.id, token());
    const deactivated = await caller(t, root)
      .post(`/v1/admin/mobile-devices/${id}/deactivate`, { reason: 'lost phone' })
      .expect(200);
    expect(deactivated.body.data).toMatchObject({
      is_active: false,
      deactivated_by: root.user.id,
      deactivation_reason: 'lost phone',
    });
    expect(
      (await caller(t, root).post(`/v1/admin/mobile-devices/${id}/deactivate`).expect(409)).body.error.details,
    ).toEqual({ from: 'inactive', action: 'deactivate' });
    const fresh = token();
    const refreshed = await caller(t, root)
      .post(`/v1/admin/mobile-devices/${id}/refresh-token`, { push_token: fresh })
      .expect(200);
    expect(refreshed.body.data).toMatchObject({
      is_active: false,
      push_token_hint: fresh.slice(-6),
      token_refreshed_at: expect.any(String),
    });
    await sql("UPDATE mobile_devices SET deactivation_reason = 'unregistered' WHERE id = $1", [id]);
    const revived = await caller(t, root)
      .post(`/v1/admin/mobile-devices/${id}/refresh-token`, { push_token: token() })
      .expect(200);
    expect(revived.body.data).toMatchObject({ is_active: true, deactivated_at: null, deactivation_reason: null });
    expect(
      (await caller(t, root).post('/v1/admin/mobile-devices/987654321/deactivate').expect(404)).body.error.code,
    ).toBe('MOBILE_DEVICE_NOT_FOUND');
  });
});

describe('send-push jobs with the log provider', () => {
  let enqueuer: TestApp;
  let root: { user: TestUser; auth: string };
  const schema = jobsSchema();
  beforeAll(async () => {
    enqueuer = await startApp({ widgets: false, env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'false' } });
    root = await actor('super_admin');
  });
  afterAll(() => enqueuer.close());

  it('202 with job_id, Location and Retry-After; queued until a worker runs it; succeeded with the result', async () => {
    const user = await createUser();
    const active = await registerDevice(enqueuer, root.auth, user.id, token());
    const inactive = await registerDevice(enqueuer, root.auth, user.id, token());
    await caller(enqueuer, root).post(`/v1/admin/mobile-devices/${inactive}/deactivate`).expect(200);
    const messageId = await sendMessage(enqueuer, root.auth, user.id);
    const accepted = await caller(enqueuer, root)
      .post(`/v1/admin/inbox/${messageId}/send-push`, { title: 'Heads up' })
      .expect(202);
    const jobId = accepted.body.data.job_id as string;
    expect(accepted.body.data).toEqual({ job_id: jobId, state: 'queued' });
    expect(accepted.headers.location).toBe(`/v1/admin/jobs/${jobId}`);
    expect(accepted.headers['retry-after']).toBe('1');
    expect(
      await sql(
        "SELECT action, changes FROM audit_events WHERE action = 'inbox_message.send_push' AND resource_id = $1",
        [String(messageId)],
      ),
    ).toEqual([{ action: 'inbox_message.send_push', changes: { job_id: [null, jobId] } }]);
    const queued = await caller(enqueuer, root).get(`/v1/admin/jobs/${jobId}`).expect(200);
    expect(queued.body.data).toMatchObject({
      job_id: jobId,
      type: 'send-push',
      state: 'queued',
      attempts: 0,
      started_at: null,
      finished_at: null,
      result: null,
      error: null,
    });

    const worker = await startApp({ widgets: false, env: { JOBS_SCHEMA: schema, JOB_WORKERS: 'true' } });
    try {
      const done = await waitForJob(worker, root.auth, jobId);
      expect(done).toMatchObject({
        state: 'succeeded',
        attempts: 1,
        result: { message_id: messageId, devices: 1, sent: 1, failed: 0, deactivated: 0 },
        error: null,
      });
      expect(done.started_at).toEqual(expect.any(String));
      expect(done.finished_at).toEqual(expect.any(String));
    } finally {
      await worker.close();
    }
    expect(
      await sql('SELECT mobile_device_id, provider, outcome FROM push_deliveries WHERE job_id = $1', [jobId]),
    ).toEqual([{ mobile_device_id: active, provider: 'log', outcome: 'sent' }]);
    const message = await caller(enqueuer, root).get(`/v1/admin/inbox/${messageId}`).expect(200);
    expect(message.body.data.last_pushed_at).toEqual(expect.any(String));
  }, 60_000);

  it('404 JOB_NOT_FOUND for an unknown job, 400 for a malformed id, 404 for pushing a deleted message', async () => {
    expect((await caller(enqueuer, root).get(`/v1/admin/jobs/${randomUUID()}`).expect(404)).body.error.code).toBe(
      'JOB_NOT_FOUND',
    );
    expect((await caller(enqueuer, root).get('/v1/admin/jobs/42').expect(400)).body.error.details.fields[0].field).toBe(
      'job_id',
    );
    const messageId = await sendMessage(enqueuer, root.auth, (await createUser()).id);
    await caller(enqueuer, root).delete(`/v1/admin/inbox/${messageId}`).expect(200);
    expect(
      (await caller(enqueuer, root).post(`/v1/admin/inbox/${messageId}/send-push`).expect(404)).body.error.code,
    ).toBe('MESSAGE_NOT_FOUND');
  });

  it('two instances with workers process each job exactly once', async () => {
    const shared = jobsSchema();
    const [one, two] = await Promise.all([
      startApp({ widgets: false, env: { JOBS_SCHEMA: shared, JOB_WORKERS: 'true' } }),
      startApp({ widgets: false, env: { JOBS_SCHEMA: shared, JOB_WORKERS: 'true' } }),
    ]);
    try {
      const jobs: string[] = [];
      for (let index = 0; index < 20; index += 1) {
        const user = await createUser();
        await registerDevice(one, root.auth, user.id, token());
        const messageId = await sendMessage(one, root.auth, user.id);
        const app = index % 2 === 0 ? one : two;
        jobs.push(
          (await caller(app, root).post(`/v1/admin/inbox/${messageId}/send-push`).expect(202)).body.data
            .job_id as string,
        );
      }
      for (const jobId of jobs) expect((await waitForJob(one, root.auth, jobId)).state).toBe('succeeded');
      const deliveries = await sql<{ job_id: string; n: number }>(
        'SELECT job_id::text, count(*)::int AS n FROM push_deliveries WHERE job_id = ANY($1::uuid[]) GROUP BY job_id',
        [jobs],
      );
      expect(deliveries).toHaveLength(20);
      expect(deliveries.every((row) => row.n === 1)).toBe(true);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 90_000);
});

describe('send-push through FCM HTTP v1 (fake server on loopback)', () => {
  let fcm: Awaited<ReturnType<typeof startFakeFcm>>;
  let t: TestApp;
  let root: { user: TestUser; auth: string };
  beforeAll(async () => {
    fcm = await startFakeFcm();
    t = await startApp({
      widgets: false,
      env: {
        JOBS_SCHEMA: jobsSchema(),
        JOB_WORKERS: 'true',
        PUSH_PROVIDER: 'fcm',
        FCM_ENDPOINT: fcm.endpoint,
        FCM_CREDENTIALS: fcm.credentials,
      },
    });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await t.close();
    await fcm.close();
  });

  it('active, inactive and unregistered devices: right request shape, the unregistered one deactivated, a 503 retried', async () => {
    const user = await createUser();
    const good = token('good');
    const flaky = token('flaky');
    const dead = token('unregistered');
    const goodId = await registerDevice(t, root.auth, user.id, good);
    const flakyId = await registerDevice(t, root.auth, user.id, flaky);
    const deadId = await registerDevice(t, root.auth, user.id, dead);
    const inactiveId = await registerDevice(t, root.auth, user.id, token('inactive'));
    await caller(t, root).post(`/v1/admin/mobile-devices/${inactiveId}/deactivate`).expect(200);
    const messageId = await sendMessage(t, root.auth, user.id);

    const accepted = await caller(t, root).post(`/v1/admin/inbox/${messageId}/send-push`).expect(202);
    const job = await waitForJob(t, root.auth, accepted.body.data.job_id as string, 30_000);
    expect(job).toMatchObject({
      state: 'succeeded',
      attempts: 2,
      result: { message_id: messageId, devices: 3, sent: 2, failed: 0, deactivated: 1 },
    });

    const mine = fcm.sends.filter((send) => [good, flaky, dead].includes(send.body.message?.token ?? ''));
    expect(mine.map((send) => send.body.message?.token).sort()).toEqual([dead, flaky, flaky, good].sort());
    const first = mine[0];
    expect(first?.path).toBe('/v1/projects/fake-project/messages:send');
    expect(first?.authorization).toBe('Bearer fake-access-token');
    expect(first?.body.message).toMatchObject({
      notification: { title: 'Door open', body: 'Front door is open' },
      data: { message_id: String(messageId), type: 'alert', conversation_id: 'site-7' },
    });
    // The OAuth2 assertion is a JWT signed with the service account's key.
    const assertion = new URLSearchParams(fcm.tokenRequests[0]).get('assertion') ?? '';
    expect(jwt.verify(assertion, fcm.publicKeyPem, { algorithms: ['RS256'] })).toMatchObject({
      iss: 'push@fake-project.iam.gserviceaccount.com',
      scope: 'https://www.googleapis.com/auth/firebase.messaging',
    });

    expect(
      await sql(
        'SELECT id, is_active, deactivation_reason FROM mobile_devices WHERE id = ANY($1::bigint[]) ORDER BY id',
        [[goodId, flakyId, deadId, inactiveId]],
      ),
    ).toEqual([
      { id: goodId, is_active: true, deactivation_reason: null },
      { id: flakyId, is_active: true, deactivation_reason: null },
      { id: deadId, is_active: false, deactivation_reason: 'unregistered' },
      { id: inactiveId, is_active: false, deactivation_reason: 'deactivated' },
    ]);
    const outcomes = await sql<{ mobile_device_id: number; outcome: string }>(
      'SELECT mobile_device_id, outcome FROM push_deliveries WHERE job_id = $1 ORDER BY id',
      [accepted.body.data.job_id],
    );
    expect(outcomes.filter((row) => row.mobile_device_id === flakyId).map((row) => row.outcome)).toEqual([
      'retryable',
      'sent',
    ]);
    expect(outcomes.filter((row) => row.mobile_device_id === goodId).map((row) => row.outcome)).toEqual(['sent']);
    // The feed hears one final outcome per device (not the retried attempt) and the deactivation.
    const events = await sql<{ type: string; data: Record<string, unknown> }>(
      `SELECT type, data FROM events
       WHERE (resource_type = 'inbox_message' AND resource_id = $1) OR (type = 'mobile_device.deactivated' AND resource_id = $2)
       ORDER BY seq, id`,
      [String(messageId), String(deadId)],
    );
    const byDevice = (id: number): string[] =>
      events.filter((event) => event.data.mobile_device_id === id).map((event) => event.type);
    expect(byDevice(goodId)).toEqual(['push.delivered']);
    expect(byDevice(flakyId)).toEqual(['push.delivered']);
    expect(byDevice(deadId).sort()).toEqual(['mobile_device.deactivated', 'push.failed']);
    expect(events.find((event) => event.type === 'push.failed')?.data).toMatchObject({
      message_id: messageId,
      mobile_device_id: deadId,
      user_id: user.id,
      error: expect.any(String),
    });

    // The unregistered device comes back with a new token.
    const revived = await caller(t, root)
      .post(`/v1/admin/mobile-devices/${deadId}/refresh-token`, { push_token: token('good') })
      .expect(200);
    expect(revived.body.data.is_active).toBe(true);
  }, 60_000);
});
