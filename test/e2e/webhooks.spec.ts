import pg from 'pg';
import { spawn } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { endpointAgent, postWebhook } from '../../src/webhooks/webhook-http.js';
import { WebhookSender } from '../../src/webhooks/webhook-sender.js';
import { WebhookEndpointsRepository } from '../../src/webhooks/webhook-endpoints.repository.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { actor, createUser, permissionId, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql, sqlOn } from '../support/db.js';
import { createOwnDatabase } from '../support/own-database.js';
import { jobsSchema } from '../support/jobs.js';
import { freePort } from '../support/redis-server.js';
import { caller } from '../support/requests.js';
import { testDatabaseUrl } from '../support/test-env.js';
import { WebhookReceiver, type Received } from '../support/webhook-receiver.js';

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
}

const LOCAL = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_ALLOW_HTTP: 'true' };

/** The event as verified with the reference implementation (throws on a bad signature). */
function verified(
  secret: string,
  request: Received,
): { id: string; type: string; resource_id: unknown; data?: unknown } {
  return new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as {
    id: string;
    type: string;
    resource_id: unknown;
    data?: unknown;
  };
}

/*
 * Webhooks (part 6.12): endpoints, signed delivery through the job queue to real receivers on
 * loopback, verified with the `standardwebhooks` package; retries, rotation, disabling, and
 * two instances delivering each event once.
 */
describe('webhooks', () => {
  const receiver = new WebhookReceiver();
  let t: TestApp;
  let root: Caller;
  const schema = jobsSchema();
  beforeAll(async () => {
    await receiver.start();
    t = await startApp({
      widgets: false,
      env: { ...LOCAL, JOBS_SCHEMA: schema, JOB_WORKERS: 'true', WEBHOOK_WORKERS: 'true' },
    });
    root = await actor('super_admin');
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
  });

  async function endpoint(
    path: string,
    eventTypes: string[] = ['user.create'],
  ): Promise<{ id: number; secret: string }> {
    const response = await caller(t, root)
      .post('/v1/admin/webhook-endpoints', { url: receiver.url(path), event_types: eventTypes })
      .expect(201);
    return { id: response.body.data.id as number, secret: response.body.data.secret as string };
  }

  /**
   * An event only this spec makes (`webhook_endpoint.test`, the audit event of a test delivery to
   * an endpoint of its own): other specs write users, devices… on the same feed at the same time.
   * Answers its request id, which the event carries.
   */
  let dummy: number | undefined;
  async function trigger(): Promise<string> {
    dummy ??= (await endpoint('/dummy', ['none.none'])).id;
    const response = await caller(t, root).post(`/v1/admin/webhook-endpoints/${dummy}/test`).expect(202);
    return response.headers['x-request-id'] as string;
  }

  /** Requests to `path` carrying the events of these request ids, once all have come. */
  async function received(path: string, requestIds: readonly string[], timeoutMs = 15_000): Promise<Received[]> {
    const ours = (): Received[] =>
      receiver.at(path).filter((request) => requestIds.includes(JSON.parse(request.body).request_id as string));
    const until = Date.now() + timeoutMs;
    while (new Set(ours().map((request) => request.headers['webhook-id'])).size < requestIds.length) {
      if (Date.now() > until) throw new Error(`${path}: not all of ${requestIds.join(', ')} in ${timeoutMs} ms`);
      await sleep(50);
    }
    return ours();
  }

  async function deliveries(endpointId: number, query = ''): Promise<Delivery[]> {
    const response = await caller(t, root)
      .get(`/v1/admin/webhook-endpoints/${endpointId}/deliveries?page_size=100${query}`)
      .expect(200);
    return response.body.data as Delivery[];
  }

  async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > until) throw new Error(`not reached in ${timeoutMs} ms: ${JSON.stringify(value)}`);
      await sleep(100);
    }
  }

  it('an endpoint shows its secret once; reads, lists and the audit trail never do', async () => {
    const created = await caller(t, root)
      .post('/v1/admin/webhook-endpoints', {
        url: receiver.url('/crud'),
        description: 'SIEM',
        event_types: ['authority.revoke', 'user.suspend'],
      })
      .expect(201);
    const { id, secret } = created.body.data as { id: number; secret: string };
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(created.headers.location).toBe(`/v1/admin/webhook-endpoints/${id}`);
    expect(created.body.data).toMatchObject({
      url: receiver.url('/crud'),
      description: 'SIEM',
      event_types: ['authority.revoke', 'user.suspend'],
      is_active: true,
      disabled_reason: null,
      created_by: root.user.id,
    });
    const read = await caller(t, root).get(`/v1/admin/webhook-endpoints/${id}`).expect(200);
    expect(read.body.data).not.toHaveProperty('secret');
    const listed = await caller(t, root).get('/v1/admin/webhook-endpoints?page_size=100').expect(200);
    expect(JSON.stringify(listed.body.data)).not.toContain(secret);
    const rows = await sql<{ changes: unknown }>(
      "SELECT changes FROM audit_events WHERE resource_type = 'webhook_endpoint' AND resource_id = $1",
      [String(id)],
    );
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(secret.slice(6));
    // The feed shows the endpoint as the API does: no secret there either.
    const feed = await caller(t, root).get('/v1/admin/events?types=webhook_endpoint.create&limit=1000').expect(200);
    const event = (feed.body.data as { resource_id: unknown; data: Record<string, unknown> }[]).find(
      (item) => item.resource_id === id,
    );
    // The URL only as its origin: receivers keep tokens in paths and query strings.
    expect(event?.data).toMatchObject({
      id,
      url: `${new URL(receiver.url('/crud')).origin}/…`,
      event_types: ['authority.revoke', 'user.suspend'],
    });
    expect(JSON.stringify(event)).not.toContain(secret.slice(6));
    expect(event?.data).not.toHaveProperty('secret');

    const etag = read.headers.etag as string;
    const patched = await caller(t, root)
      .patch(`/v1/admin/webhook-endpoints/${id}`, { event_types: ['*'], description: null })
      .set('If-Match', etag)
      .expect(200);
    expect(patched.body.data).toMatchObject({ event_types: ['*'], description: null });
    // A stale ETag changes nothing.
    await caller(t, root)
      .patch(`/v1/admin/webhook-endpoints/${id}`, { is_active: false })
      .set('If-Match', etag)
      .expect(412);

    const removed = await caller(t, root).delete(`/v1/admin/webhook-endpoints/${id}`).expect(200);
    expect(removed.body.data).toMatchObject({ id, event_types: ['*'] });
    await caller(t, root).get(`/v1/admin/webhook-endpoints/${id}`).expect(404);
    expect((await caller(t, root).delete(`/v1/admin/webhook-endpoints/${id}`).expect(404)).body.error.code).toBe(
      'WEBHOOK_ENDPOINT_NOT_FOUND',
    );
    expect(await sql('SELECT count(*)::int AS n FROM webhook_endpoints WHERE id = $1', [id])).toEqual([{ n: 0 }]);
  });

  it('refuses bad input with the field named, and keeps webhooks.manage from roles without it', async () => {
    for (const [body, field] of [
      [{ url: 'ftp://example.com/x', event_types: ['*'] }, 'url'],
      [{ url: 'not a url', event_types: ['*'] }, 'url'],
      [{ url: 'https://user:pw@93.184.216.34/x', event_types: ['*'] }, 'url'],
      [{ url: receiver.url('/x'), event_types: [] }, 'event_types'],
      [{ url: receiver.url('/x'), event_types: ['*', 'user.create'] }, 'event_types'],
      [{ url: receiver.url('/x'), event_types: ['DROP TABLE'] }, 'event_types'],
      [{ url: receiver.url('/x'), event_types: ['*'], secret: 'whsec_mine' }, 'secret'],
    ] as const) {
      const response = await caller(t, root).post('/v1/admin/webhook-endpoints', body).expect(400);
      expect(response.body.error.code).toBe('VALIDATION_FAILED');
      expect(JSON.stringify(response.body.error.details)).toContain(field);
    }
    const admin = await actor('admin');
    await caller(t, admin).get('/v1/admin/webhook-endpoints').expect(200);
    const refused = await caller(t, admin)
      .post('/v1/admin/webhook-endpoints', { url: receiver.url('/x'), event_types: ['*'] })
      .expect(403);
    expect(refused.body.error).toMatchObject({ code: 'PERMISSION_DENIED', details: { permission: 'webhooks.manage' } });
    await caller(t, await actor('operator'))
      .get('/v1/admin/webhook-endpoints')
      .expect(403);
    await caller(t, admin).post('/v1/admin/webhook-deliveries/1/retry').expect(403);
  });

  it('a URL token stays out of the audit trail and the feed; an over-long normalised URL is a 400, not a 500', async () => {
    const { id } = await endpoint('/tokened?token=SUPERSECRETTOKEN');
    await caller(t, root)
      .patch(`/v1/admin/webhook-endpoints/${id}`, { url: receiver.url('/tokened/PATHSECRET?token=OTHERSECRET') })
      .expect(200);
    const audit = await sql(
      "SELECT changes FROM audit_events WHERE resource_type = 'webhook_endpoint' AND resource_id = $1",
      [String(id)],
    );
    const feed = await sql("SELECT data FROM events WHERE resource_type = 'webhook_endpoint' AND resource_id = $1", [
      String(id),
    ]);
    expect(audit).toHaveLength(2);
    expect(feed).toHaveLength(2);
    for (const secret of ['SUPERSECRETTOKEN', 'PATHSECRET', 'OTHERSECRET'])
      expect(JSON.stringify([audit, feed])).not.toContain(secret);
    // The one who manages it still reads the whole URL.
    const read = await caller(t, root).get(`/v1/admin/webhook-endpoints/${id}`).expect(200);
    expect(read.body.data.url).toContain('OTHERSECRET');
    // 1400 characters sent, about 2100 once spaces are escaped: refused before the database sees it.
    const long = await caller(t, root)
      .patch(`/v1/admin/webhook-endpoints/${id}`, { url: `https://1.1.1.1/${' x'.repeat(700)}` })
      .expect(400);
    expect(long.body.error.details.fields[0]).toMatchObject({ field: 'url', rule: 'max_length' });
  });

  it('the delivery log pages newest first by number (not as text)', async () => {
    const { id } = await endpoint('/many', ['webhook.test']);
    for (let n = 0; n < 12; n += 1) await caller(t, root).post(`/v1/admin/webhook-endpoints/${id}/test`).expect(202);
    await receiver.waitFor('/many', 12);
    const rows = await deliveries(id);
    expect(rows).toHaveLength(12);
    const ids = rows.map((row) => Number(row.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const page = await caller(t, root)
      .get(`/v1/admin/webhook-endpoints/${id}/deliveries?page_size=5&page=1&sort=id:asc`)
      .expect(200);
    expect((page.body.data as Delivery[]).map((row) => Number(row.id))).toEqual([...ids].reverse().slice(0, 5));
  });

  it('the connection goes to the address checked, whatever the host name resolves to now', async () => {
    const port = new URL(receiver.url('/')).port;
    const outcome = await postWebhook(
      new URL(`http://rebinding.invalid:${port}/pinned`),
      ['127.0.0.1'],
      { 'content-type': 'application/json' },
      '{}',
    );
    expect(outcome).toEqual({ ok: true, status: 200, error: null });
    expect(receiver.at('/pinned')).toHaveLength(1);
    // And over a kept-open connection, as runs send.
    const agent = endpointAgent(new URL(`http://rebinding.invalid:${port}/`), 2);
    try {
      for (let n = 0; n < 3; n += 1)
        expect(
          await postWebhook(new URL(`http://rebinding.invalid:${port}/pinned`), ['127.0.0.1'], {}, '{}', agent),
        ).toEqual({
          ok: true,
          status: 200,
          error: null,
        });
    } finally {
      agent.destroy();
    }
    expect(receiver.at('/pinned')).toHaveLength(4);
  });

  it('delivers access-change events (part 6.17) to an endpoint subscribed to them, signed, with their cause', async () => {
    const { secret } = await endpoint('/access', ['access.gained', 'access.lost']);
    const viewer = await createUser({ role: 'viewer' });
    const granted = await caller(t, root)
      .post('/v1/admin/permission-grants/grant', { user_id: viewer.id, permission_id: permissionId('audit.read') })
      .expect(201);
    const requestId = granted.headers['x-request-id'] as string;
    const [request] = await received('/access', [requestId]);
    if (request === undefined) throw new Error('no delivery');
    const event = verified(secret, request);
    expect(event).toMatchObject({
      type: 'access.gained',
      resource_type: 'user',
      resource_id: viewer.id,
      data: {
        user_id: viewer.id,
        device_id: null,
        permission_code: 'audit.read',
        decided_by: 'permission_grant',
        cause: expect.stringMatching(/^\d{20}-\d{20}$/) as unknown,
      },
    });
    // The cause is the grant's own event, delivered to nobody here but on the feed with that id.
    const [cause] = await sql<{ type: string }>(
      "SELECT type FROM events WHERE lpad(seq::text, 20, '0') || '-' || lpad(id::text, 20, '0') = $1",
      [(event.data as { cause: string }).cause],
    );
    expect(cause?.type).toBe('permission_grant.grant');
  });

  it('delivers each subscribed event signed per Standard Webhooks, verified by the reference implementation', async () => {
    const { id, secret } = await endpoint('/signed', ['webhook_endpoint.test']);
    const requestId = await trigger();
    const [request] = await received('/signed', [requestId]);
    if (request === undefined) throw new Error('no delivery');
    const event = verified(secret, request);
    expect(event).toMatchObject({ type: 'webhook_endpoint.test', resource_id: dummy });
    expect(request.headers['webhook-id']).toBe(event.id);
    expect(request.headers['content-type']).toBe('application/json');
    expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    // The same event on the feed, with the same id.
    const feed = await caller(t, root).get('/v1/admin/events?types=webhook_endpoint.test&limit=1000').expect(200);
    expect((feed.body.data as { id: string }[]).map((item) => item.id)).toContain(event.id);
    const [logged] = await eventually(
      () => deliveries(id),
      (rows) => rows[0]?.state === 'succeeded',
    );
    expect(logged).toMatchObject({
      event_id: event.id,
      event_type: 'webhook_endpoint.test',
      attempts: 1,
      last_status: 200,
      last_error: null,
    });
    // A tampered body fails verification (the check is real).
    expect(() =>
      verified(secret, { ...request, body: request.body.replace('webhook_endpoint', 'webhook_endpoinT') }),
    ).toThrow();
  });

  it('a new endpoint hears of events committed after it was made, even when the fan-out is behind', async () => {
    // Hold the fan-out's cursor, as a busy or lagging fan-out would.
    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT after FROM webhook_fanout WHERE id = 1 FOR UPDATE');
      const before = await trigger();
      const { secret } = await endpoint('/fresh', ['webhook_endpoint.test']);
      const after = await trigger();
      await holder.query('COMMIT');
      const [request] = await received('/fresh', [after]);
      if (request === undefined) throw new Error('no delivery');
      verified(secret, request);
      await sleep(500);
      expect(receiver.at('/fresh').map((request) => JSON.parse(request.body).request_id as string)).not.toContain(
        before,
      );
    } finally {
      await holder.end();
    }
  });

  it('after rotate-secret every secret rotated away in the last 24 hours signs alongside the new one, shown once', async () => {
    const { id, secret: first } = await endpoint('/rotate', ['webhook_endpoint.test']);
    const rotate = async (): Promise<string> =>
      (await caller(t, root).post(`/v1/admin/webhook-endpoints/${id}/rotate-secret`).expect(200)).body.data
        .secret as string;
    const second = await rotate();
    const current = await rotate();
    expect(new Set([first, second, current]).size).toBe(3);
    for (const secret of [second, current]) expect(secret).toMatch(/^whsec_/);

    /** Which of the secrets each signature of the header verifies with (the reference implementation, one at a time). */
    const signers = (request: Received, secrets: readonly string[]): string[][] =>
      String(request.headers['webhook-signature'])
        .split(' ')
        .map((signature) =>
          secrets.filter((secret) => {
            try {
              verified(secret, { ...request, headers: { ...request.headers, 'webhook-signature': signature } });
              return true;
            } catch {
              return false;
            }
          }),
        );

    // Two rotations within the overlap: the current secret and both old ones sign, one signature each.
    const [request] = await received('/rotate', [await trigger()]);
    if (request === undefined) throw new Error('no delivery');
    expect(signers(request, [first, second, current])).toEqual([[current], [second], [first]]);
    for (const secret of [first, second, current]) expect(verified(secret, request).type).toBe('webhook_endpoint.test');

    // The first secret was rotated away more than 24 hours ago: it no longer signs, the second still does.
    await sql(
      "UPDATE webhook_previous_secrets SET rotated_at = now() - interval '24 hours 1 second' WHERE endpoint_id = $1 AND secret = $2",
      [id, first],
    );
    const [later] = await received('/rotate', [await trigger()]);
    if (later === undefined) throw new Error('no second delivery');
    expect(signers(later, [first, second, current])).toEqual([[current], [second]]);
    expect(() => verified(first, later)).toThrow();

    // The hourly sweep forgets it; the secret still within its 24 hours stays.
    await t.app.get(UnitOfWork).run((tx) => t.app.get(WebhookEndpointsRepository).forgetRetiredSecrets(tx));
    expect(await sql('SELECT secret FROM webhook_previous_secrets WHERE endpoint_id = $1', [id])).toEqual([
      { secret: second },
    ]);
  });

  it('a receiver that answers 500 and then 200 gets the event again after a backoff', async () => {
    let calls = 0;
    receiver.answer('/flaky', () => ({ status: (calls += 1) === 1 ? 500 : 200 }));
    const { id, secret } = await endpoint('/flaky', ['webhook_endpoint.test']);
    await trigger();
    const [first, second] = await receiver.waitFor('/flaky', 2, 20_000);
    if (first === undefined || second === undefined) throw new Error('no retry');
    expect(verified(secret, second).id).toBe(verified(secret, first).id);
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    // Backoff: about 5 s (± 20 % jitter), not at once.
    expect(second.at - first.at).toBeGreaterThanOrEqual(3500);
    const [logged] = await eventually(
      () => deliveries(id),
      (rows) => rows[0]?.state === 'succeeded',
    );
    expect(logged).toMatchObject({ attempts: 2, last_status: 200, last_error: null });
  }, 30_000);

  it('redirects are not followed; a failed delivery is retried now on request, honouring If-Match', async () => {
    receiver.answer('/moved', { status: 302, headers: { location: receiver.url('/elsewhere') } });
    const { id } = await endpoint('/moved', ['webhook_endpoint.test']);
    await trigger();
    await receiver.waitFor('/moved');
    const [pending] = await eventually(
      () => deliveries(id),
      (rows) => rows[0]?.attempts === 1,
    );
    expect(pending).toMatchObject({ state: 'pending', last_status: 302, last_error: 'redirect (302) not followed' });
    expect(receiver.at('/elsewhere')).toHaveLength(0);
    // Its retries end (as after 3 days): failed. Then a retry on request delivers it.
    await sql("UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL WHERE id = $1", [pending?.id]);
    // The endpoint is failing, its next probe an hour away: a retry by hand does not wait for it.
    await sql("UPDATE webhook_endpoint_failures SET next_probe_at = now() + interval '1 hour' WHERE endpoint_id = $1", [
      id,
    ]);
    receiver.answer('/moved', { status: 204 });
    // Its version is its attempts (1): a stale If-Match is 412 and queues nothing.
    const stale = await caller(t, root)
      .post(`/v1/admin/webhook-deliveries/${pending?.id}/retry`)
      .set('If-Match', '"0"')
      .expect(412);
    expect(stale.body.error).toMatchObject({ code: 'PRECONDITION_FAILED', details: { current_etag: '"1"' } });
    expect(await sql('SELECT state FROM webhook_deliveries WHERE id = $1', [pending?.id])).toEqual([
      { state: 'failed' },
    ]);
    const retried = await caller(t, root)
      .post(`/v1/admin/webhook-deliveries/${pending?.id}/retry`)
      .set('If-Match', `"${pending?.attempts}"`)
      .expect(202);
    expect(retried.body.data).toMatchObject({ id: pending?.id, state: 'pending' });
    const [delivered] = await eventually(
      () => deliveries(id),
      (rows) => rows[0]?.state === 'succeeded',
    );
    expect(delivered).toMatchObject({ attempts: 2, last_status: 204 });
    const audit = await sql(
      "SELECT actor_id FROM audit_events WHERE action = 'webhook_delivery.retry' AND resource_id = $1",
      [pending?.id],
    );
    expect(audit).toEqual([{ actor_id: root.user.id }]);
    await caller(t, root).post('/v1/admin/webhook-deliveries/999999999/retry').expect(404);
  });

  it('test queues a webhook.test event to that endpoint only', async () => {
    const { id, secret } = await endpoint('/test-only', ['user.suspend']);
    const other = await endpoint('/test-other', ['*']);
    const accepted = await caller(t, root).post(`/v1/admin/webhook-endpoints/${id}/test`).expect(202);
    expect(accepted.body.data).toMatchObject({ event_type: 'webhook.test', state: 'pending' });
    const [request] = await receiver.waitFor('/test-only');
    if (request === undefined) throw new Error('no test delivery');
    expect(verified(secret, request)).toMatchObject({ type: 'webhook.test', resource_id: id });
    await sleep(500);
    const toOther = receiver.at('/test-other').map((received) => verified(other.secret, received).type);
    expect(toOther).not.toContain('webhook.test');
  });

  it('the documented example receiver (examples/webhook-receiver.mjs) verifies and prints a test delivery', async () => {
    const port = await freePort();
    const created = await caller(t, root)
      .post('/v1/admin/webhook-endpoints', { url: `http://127.0.0.1:${port}/`, event_types: ['*'] })
      .expect(201);
    const { id, secret } = created.body.data as { id: number; secret: string };
    const example = spawn(process.execPath, ['examples/webhook-receiver.mjs'], {
      env: { ...process.env, WEBHOOK_SECRET: secret, RECEIVER_PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let printed = '';
      // Subscribed to every type, it also hears of its own endpoint's creation: wait for the test event.
      const line = new Promise<string>((resolve, reject) => {
        example.stdout.on('data', (chunk: Buffer) => {
          printed += chunk.toString('utf8');
          const test = printed.split('\n').find((printedLine) => printedLine.includes(' webhook.test '));
          if (test !== undefined) resolve(`${test}\n`);
        });
        example.on('exit', (code) => reject(new Error(`the example receiver exited with ${code}`)));
      });
      const listening = new Promise<void>((resolve) =>
        example.stderr.on('data', (chunk: Buffer) => chunk.toString('utf8').includes('listening') && resolve()),
      );
      await listening;
      await caller(t, root).post(`/v1/admin/webhook-endpoints/${id}/test`).expect(202);
      expect(await line).toMatch(new RegExp(`^\\S+ webhook\\.test webhook_endpoint ${id}\\n`));
    } finally {
      example.kill();
      await caller(t, root).delete(`/v1/admin/webhook-endpoints/${id}`).expect(200);
    }
  });

  it('a slow endpoint does not delay another', async () => {
    receiver.answer('/slow', { status: 200, delayMs: 8000 });
    await endpoint('/slow', ['webhook_endpoint.test']);
    await endpoint('/fast', ['webhook_endpoint.test']);
    const requestId = await trigger();
    const [fast] = await received('/fast', [requestId]);
    const [slow] = await received('/slow', [requestId]);
    // The fast endpoint had its event before the slow one had even answered (8 s after it got its own).
    expect(fast?.at).toBeLessThan((slow?.at ?? 0) + 8000);
    const slowLog = await sql<{ state: string }>(
      "SELECT d.state FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.url LIKE '%/slow' AND d.payload->>'request_id' = $1",
      [requestId],
    );
    expect(slowLog).toEqual([{ state: 'pending' }]);
  }, 20_000);

  it('an endpoint failing for 3 days is disabled, says so on the feed, and can be enabled again', async () => {
    receiver.answer('/down', { status: 503 });
    const { id } = await endpoint('/down', ['webhook_endpoint.test']);
    await trigger();
    await eventually(
      () => deliveries(id),
      (rows) => rows[0]?.attempts === 1,
    );
    // Failing now: a new event's delivery waits for the next probe instead of going at once.
    await trigger();
    const waiting = await eventually(
      () => deliveries(id),
      (rows) => rows.length === 2,
    );
    expect(waiting[0]).toMatchObject({ attempts: 0, state: 'pending' });
    expect(Date.parse(waiting[0]?.next_attempt_at ?? '')).toBeGreaterThan(Date.now() + 2000);
    // As if it had been failing for 4 days: the minute's sweep disables it.
    await sql("UPDATE webhook_endpoint_failures SET failing_since = now() - interval '4 days' WHERE endpoint_id = $1", [
      id,
    ]);
    await t.app.get(WebhookSender).sweep();
    const disabled = await caller(t, root).get(`/v1/admin/webhook-endpoints/${id}`).expect(200);
    expect(disabled.body.data).toMatchObject({ is_active: false, disabled_reason: 'failing' });
    for (const ended of await deliveries(id))
      expect(ended).toMatchObject({ state: 'failed', last_error: 'endpoint disabled: failing for 3 days' });
    const feed = await caller(t, root).get('/v1/admin/events?types=webhook_endpoint.disabled&limit=1000').expect(200);
    expect(
      (feed.body.data as { resource_id: unknown; actor_id: unknown }[]).filter((e) => e.resource_id === id),
    ).toEqual([expect.objectContaining({ actor_id: null })]);
    const enabled = await caller(t, root).patch(`/v1/admin/webhook-endpoints/${id}`, { is_active: true }).expect(200);
    expect(enabled.body.data).toMatchObject({ is_active: true, disabled_reason: null });
    expect(await sql('SELECT count(*)::int AS n FROM webhook_endpoint_failures WHERE endpoint_id = $1', [id])).toEqual([
      { n: 0 },
    ]);
  });

  it('a deleted endpoint’s deliveries stay readable; pending ones end as failed', async () => {
    receiver.answer('/gone', { status: 500 });
    const { id } = await endpoint('/gone', ['webhook_endpoint.test']);
    await trigger();
    await eventually(
      () => deliveries(id),
      (rows) => rows[0]?.attempts === 1,
    );
    await caller(t, root).delete(`/v1/admin/webhook-endpoints/${id}`).expect(200);
    const [ended] = await deliveries(id);
    expect(ended).toMatchObject({ state: 'failed', last_error: 'endpoint deleted before delivery' });
    await caller(t, root).get('/v1/admin/webhook-endpoints/999999999/deliveries').expect(404);
    await caller(t, root).post(`/v1/admin/webhook-deliveries/${ended?.id}/retry`).expect(404);
  });

  it('with more instances fanning out and delivering, each event reaches each endpoint exactly once', async () => {
    const shared = jobsSchema();
    const env = { ...LOCAL, JOBS_SCHEMA: shared, JOB_WORKERS: 'true', WEBHOOK_WORKERS: 'true' };
    const [one, two] = await Promise.all([startApp({ widgets: false, env }), startApp({ widgets: false, env })]);
    try {
      const first = await endpoint('/once-a');
      const second = await endpoint('/once-b');
      const users = await Promise.all(
        Array.from({ length: 24 }, (_, index) =>
          caller(index % 2 === 0 ? one : two, root)
            .post('/v1/admin/users', {
              email: `once-${index}-${Date.now()}@example.com`,
              display_name: 'Once',
              role_id: 4,
            })
            .expect(201)
            .then((response) => response.body.data.id as number),
        ),
      );
      for (const [path, secret] of [
        ['/once-a', first.secret],
        ['/once-b', second.secret],
      ] as const) {
        // Other specs create users too (the feed is the database's): only these users count.
        const ours = (): { id: string; resource_id: unknown }[] =>
          receiver
            .at(path)
            .map((request) => verified(secret, request))
            .filter((event) => users.includes(event.resource_id as number));
        const until = Date.now() + 20_000;
        while (new Set(ours().map((event) => event.resource_id)).size < users.length && Date.now() < until)
          await sleep(100);
        await sleep(1000); // a duplicate would arrive in this time
        const events = ours();
        expect(new Set(receiver.at(path).map((request) => request.headers['webhook-id'])).size).toBe(
          receiver.at(path).length,
        );
        expect(events.map((event) => event.resource_id).sort()).toEqual([...users].sort());
      }
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 40_000);

  describe('without WEBHOOK_ALLOW_PRIVATE and WEBHOOK_ALLOW_HTTP', () => {
    let strict: TestApp;
    beforeAll(async () => {
      strict = await startApp({ widgets: false });
    });
    afterAll(() => strict.close());

    it('URLs to loopback, private, link-local or reserved addresses, or plain http, are 422 WEBHOOK_URL_FORBIDDEN', async () => {
      for (const [url, reason] of [
        ['http://93.184.216.34/hook', 'not_https'],
        ['https://127.0.0.1/hook', 'loopback'],
        ['https://[::1]/hook', 'loopback'],
        ['https://localhost/hook', 'loopback'],
        ['https://10.1.2.3/hook', 'private_address'],
        ['https://192.168.0.10/hook', 'private_address'],
        ['https://[::ffff:172.16.0.1]/hook', 'private_address'],
        ['https://[fd00::1]/hook', 'private_address'],
        ['https://169.254.169.254/latest/meta-data', 'link_local'],
        ['https://0.0.0.0/hook', 'reserved'],
        ['https://[::127.0.0.1]/hook', 'reserved'],
        ['https://[::ffff:0:127.0.0.1]/hook', 'reserved'],
        ['https://[64:ff9b:1::a00:1]/hook', 'reserved'],
        ['https://[64:ff9b::10.0.0.1]/hook', 'reserved'],
        ['https://[2002:a00:1::1]/hook', 'reserved'],
        ['https://[fec0::1]/hook', 'reserved'],
        ['https://2130706433/hook', 'loopback'],
        ['https://0x7f.1/hook', 'loopback'],
        ['https://localhost./hook', 'loopback'],
        ['https://no-such-host.invalid/hook', 'unresolvable'],
      ] as const) {
        const response = await caller(strict, root).post('/v1/admin/webhook-endpoints', { url, event_types: ['*'] });
        expect({ url, status: response.status, error: response.body.error as unknown }).toMatchObject({
          url,
          status: 422,
          error: { code: 'WEBHOOK_URL_FORBIDDEN', details: { reason } },
        });
      }
      const created = await caller(strict, root)
        .post('/v1/admin/webhook-endpoints', { url: 'https://93.184.216.34/hook', event_types: ['*'] })
        .expect(201);
      const id = created.body.data.id as number;
      const moved = await caller(strict, root)
        .patch(`/v1/admin/webhook-endpoints/${id}`, { url: 'https://10.0.0.1/hook' })
        .expect(422);
      expect(moved.body.error.details).toMatchObject({ reason: 'private_address' });
      await caller(strict, root).delete(`/v1/admin/webhook-endpoints/${id}`).expect(200);
    });

    it('the check is repeated at delivery: an endpoint made where private addresses were allowed is refused', async () => {
      // On a database of its own, so the lenient workers above cannot deliver it first.
      const own = await createOwnDatabase('webhook_recheck');
      const alone = await startApp({ widgets: false, databaseUrl: own.url, env: { WEBHOOK_ALLOW_HTTP: 'true' } });
      try {
        const [endpointRow] = await sqlOn<{ id: number }>(
          own.url,
          "INSERT INTO webhook_endpoints (url, event_types, secret) VALUES ($1, '{webhook.test}', 'whsec_AAAA') RETURNING id",
          [receiver.url('/recheck')],
        );
        const id = Number(endpointRow?.id);
        await sqlOn(
          own.url,
          `INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, payload) VALUES ($1, 'test-1', 'webhook.test', '{"id":"test-1"}')`,
          [id],
        );
        await alone.app.get(WebhookSender).run(id);
        const [logged] = await sqlOn<{ attempts: number; last_error: string }>(
          own.url,
          'SELECT attempts, last_error FROM webhook_deliveries WHERE endpoint_id = $1',
          [id],
        );
        expect(logged).toMatchObject({ attempts: 1, last_error: expect.stringMatching(/^refused: .*loopback/) });
        expect(receiver.at('/recheck')).toHaveLength(0);
      } finally {
        await alone.close();
        await own.drop();
      }
    });
  });
});
