import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { actor } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';

/** Sends bytes as they are (no client library would send these) and reads the answer until the server closes or 1 s passes. */
function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer));
    socket.write(text);
    setTimeout(() => socket.end(), 300);
    setTimeout(() => socket.destroy(), 1000);
  });
}

/** Status line, lower-cased headers and the JSON body of a raw answer. */
function parseAnswer(answer: string): { status: number; headers: Record<string, string>; body: unknown } {
  const [head = '', ...rest] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(rest.join('\r\n\r\n')) as unknown };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('HTTP contract: envelopes, errors and headers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ redisUrl: null });
  });
  afterAll(() => t.close());

  async function createWidget(name = 'hammer'): Promise<{ id: number; version: number }> {
    const response = await t.http().post('/v1/test/widgets').send({ name, category: 'tool', weight: 3 }).expect(201);
    return response.body.data as { id: number; version: number };
  }

  describe('request id', () => {
    it('adopts a well-formed X-Request-Id in the header and meta', async () => {
      const response = await t.http().get('/health/live').set('X-Request-Id', 'portal:abc-123.x_y').expect(200);
      expect(response.headers['x-request-id']).toBe('portal:abc-123.x_y');
      expect(response.body).toEqual({
        success: true,
        data: { status: 'ok' },
        meta: { request_id: 'portal:abc-123.x_y' },
      });
    });

    it.each([['has spaces'], ['x'.repeat(129)], ['semi;colon']])('generates a UUID instead of %j', async (value) => {
      const response = await t.http().get('/health/live').set('X-Request-Id', value).expect(200);
      expect(response.headers['x-request-id']).toMatch(UUID);
      expect(response.body.meta.request_id).toBe(response.headers['x-request-id']);
    });

    it('generates one when absent, also on errors', async () => {
      const response = await t.http().get('/nowhere').expect(404);
      expect(response.headers['x-request-id']).toMatch(UUID);
      expect(response.body.meta.request_id).toBe(response.headers['x-request-id']);
    });
  });

  it('sends Cache-Control: no-store and no X-Powered-By on every response', async () => {
    for (const response of [
      await t.http().get('/health/live'),
      await t.http().get('/nowhere'),
      await t.http().post('/v1/test/widgets').send({}),
    ]) {
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.headers['x-powered-by']).toBeUndefined();
    }
  });

  it('answers an unknown route with ROUTE_NOT_FOUND', async () => {
    const response = await t.http().delete('/v1/admin/nothing-here').expect(404);
    expect(response.body).toEqual({
      success: false,
      error: { code: 'ROUTE_NOT_FOUND', message: 'No route DELETE /v1/admin/nothing-here', details: {} },
      meta: { request_id: expect.any(String) },
    });
  });

  it('refuses malformed JSON with MALFORMED_JSON and writes nothing', async () => {
    const name = `malformed-${Date.now()}`;
    const response = await t
      .http()
      .post('/v1/test/widgets')
      .set('Content-Type', 'application/json')
      .send(`{"name": "${name}", "category": "tool",`)
      .expect(400);
    expect(response.body.error).toEqual({
      code: 'MALFORMED_JSON',
      message: 'The request body is not valid JSON',
      details: {},
    });
    expect(await sql('SELECT count(*)::int AS n FROM test_widgets WHERE name = $1', [name])).toEqual([{ n: 0 }]);
  });

  it('refuses prototype pollution attempts as malformed JSON', async () => {
    const response = await t
      .http()
      .post('/v1/test/widgets')
      .set('Content-Type', 'application/json')
      .send('{"name":"x","category":"tool","__proto__":{"admin":true}}')
      .expect(400);
    expect(response.body.error.code).toBe('MALFORMED_JSON');
  });

  it('refuses a non-JSON body with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const response = await t
      .http()
      .post('/v1/test/widgets')
      .set('Content-Type', 'text/plain')
      .send('name=x')
      .expect(415);
    expect(response.body.error).toEqual({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: 'Request bodies must be application/json',
      details: { expected: 'application/json' },
    });
  });

  it('refuses a body over 1 MiB with 413 PAYLOAD_TOO_LARGE', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(1_048_600), category: 'tool' });
    const response = await t
      .http()
      .post('/v1/test/widgets')
      .set('Content-Type', 'application/json')
      .send(body)
      .expect(413);
    expect(response.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('lists every body problem in details.fields', async () => {
    const response = await t
      .http()
      .post('/v1/test/widgets')
      .send({ name: '', category: 'weapon', weight: 'heavy', owner: true })
      .expect(400);
    expect(response.body.error.code).toBe('VALIDATION_FAILED');
    const fields = response.body.error.details.fields as { field: string; rule: string; message: string }[];
    expect(fields.map((problem) => `${problem.field}:${problem.rule}`).sort()).toEqual(
      ['category:in', 'name:length', 'owner:unknown', 'weight:int', 'weight:max', 'weight:min'].sort(),
    );
    expect(fields.find((problem) => problem.field === 'owner')?.message).toBe(
      'owner is not accepted field'.replace('is not', 'is not an'),
    );
  });

  it('rejects a non-numeric path id with VALIDATION_FAILED naming the parameter', async () => {
    const response = await t.http().get('/v1/test/widgets/abc').expect(400);
    expect(response.body.error.details).toEqual({
      fields: [{ field: 'id', rule: 'int', message: 'id must be a positive integer' }],
    });
  });

  it('hides internals behind INTERNAL_ERROR', async () => {
    const response = await t.http().get('/v1/test/boom').expect(500);
    expect(response.body.error).toEqual({
      code: 'INTERNAL_ERROR',
      message: 'An unexpected error occurred',
      details: {},
    });
    expect(JSON.stringify(response.body)).not.toMatch(/secret_table|internal\.ts|at /);
  });

  describe('create, read, soft delete, restore', () => {
    it('creates with 201, Location, ETag and numeric ids, and writes the row and its audit event in one go', async () => {
      const response = await t
        .http()
        .post('/v1/test/widgets')
        .set('X-Request-Id', 'create-1')
        .send({ name: 'drill', category: 'tool' })
        .expect(201);
      const widget = response.body.data;
      expect(typeof widget.id).toBe('number');
      expect(widget).toMatchObject({
        name: 'drill',
        category: 'tool',
        weight: 0,
        version: 1,
        is_deleted: false,
        created_by: null,
        deleted_at: null,
      });
      expect(widget.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(response.headers.location).toBe(`/v1/test/widgets/${widget.id}`);
      expect(response.headers.etag).toBe('"1"');
      const events = await sql(
        'SELECT action, resource_type, resource_id, request_id, changes FROM audit_events WHERE request_id = $1',
        ['create-1'],
      );
      expect(events).toEqual([
        {
          action: 'test_widget.create',
          resource_type: 'test_widget',
          resource_id: String(widget.id),
          request_id: 'create-1',
          changes: { name: [null, 'drill'], category: [null, 'tool'], weight: [null, 0] },
        },
      ]);
    });

    it('reads one resource with its ETag', async () => {
      const { id } = await createWidget();
      const response = await t.http().get(`/v1/test/widgets/${id}`).expect(200);
      expect(response.headers.etag).toBe('"1"');
      expect(response.body).toMatchObject({
        success: true,
        data: { id, name: 'hammer' },
        meta: { cache: expect.stringMatching(/^(hit|miss)$/) },
      });
    });

    it('soft deletes with 200 then 204, hides the record, and restores with 200 then 204', async () => {
      const { id } = await createWidget('saw');
      const deleted = await t.http().delete(`/v1/test/widgets/${id}`).expect(200);
      expect(deleted.body.data).toMatchObject({ id, is_deleted: true, version: 2 });
      expect(deleted.headers.etag).toBe('"2"');
      const again = await t.http().delete(`/v1/test/widgets/${id}`).expect(204);
      expect(again.text).toBe('');
      await t.http().get(`/v1/test/widgets/${id}`).expect(404);
      const visible = await t.http().get(`/v1/test/widgets/${id}?include_deleted=true`).expect(200);
      expect(visible.body.data.is_deleted).toBe(true);
      await t.http().patch(`/v1/test/widgets/${id}`).send({ weight: 1 }).expect(404);
      const restored = await t.http().post(`/v1/test/widgets/${id}/restore`).expect(200);
      expect(restored.body.data).toMatchObject({ is_deleted: false, version: 3, deleted_at: null });
      await t.http().post(`/v1/test/widgets/${id}/restore`).expect(204);
      const actions = await sql<{ action: string }>(
        'SELECT action FROM audit_events WHERE resource_type = $2 AND resource_id = $1 ORDER BY id',
        [String(id), 'test_widget'],
      );
      expect(actions.map((event) => event.action)).toEqual([
        'test_widget.create',
        'test_widget.delete',
        'test_widget.restore',
      ]);
    });
  });

  describe('optimistic concurrency', () => {
    it('applies a write whose If-Match is current and bumps the version', async () => {
      const { id } = await createWidget();
      const response = await t
        .http()
        .patch(`/v1/test/widgets/${id}`)
        .set('If-Match', '"1"')
        .send({ weight: 9 })
        .expect(200);
      expect(response.headers.etag).toBe('"2"');
      expect(response.body.data).toMatchObject({ weight: 9, version: 2 });
      const [event] = await sql('SELECT changes FROM audit_events WHERE resource_id = $1 AND action = $2', [
        String(id),
        'test_widget.update',
      ]);
      expect(event).toEqual({ changes: { weight: [3, 9] } });
    });

    it('refuses a stale If-Match with 412 and leaves the row and audit log unchanged', async () => {
      const { id } = await createWidget();
      await t.http().patch(`/v1/test/widgets/${id}`).send({ weight: 5 }).expect(200);
      const response = await t
        .http()
        .patch(`/v1/test/widgets/${id}`)
        .set('If-Match', '"1"')
        .send({ weight: 7 })
        .expect(412);
      expect(response.body.error).toEqual({
        code: 'PRECONDITION_FAILED',
        message: 'If-Match does not match the current version',
        details: { current_etag: '"2"' },
      });
      expect(await sql('SELECT weight, version FROM test_widgets WHERE id = $1', [id])).toEqual([
        { weight: 5, version: 2 },
      ]);
      expect(
        await sql('SELECT count(*)::int AS n FROM audit_events WHERE resource_type = $2 AND resource_id = $1', [
          String(id),
          'test_widget',
        ]),
      ).toEqual([{ n: 2 }]);
    });

    it('refuses a stale If-Match on delete too', async () => {
      const { id } = await createWidget();
      await t.http().delete(`/v1/test/widgets/${id}`).set('If-Match', '"7"').expect(412);
      expect(await sql('SELECT is_deleted FROM test_widgets WHERE id = $1', [id])).toEqual([{ is_deleted: false }]);
    });
  });

  describe('audit log', () => {
    it('refuses UPDATE and DELETE at the database', async () => {
      await createWidget();
      await expect(sql('UPDATE audit_events SET action = $1', ['tampered'])).rejects.toThrow(
        /append-only: UPDATE refused/,
      );
      await expect(sql('DELETE FROM audit_events')).rejects.toThrow(/append-only: DELETE refused/);
      await expect(sql('TRUNCATE audit_events')).rejects.toThrow(/append-only: TRUNCATE refused/);
      expect(await sql('SELECT count(*)::int AS n FROM audit_events WHERE action = $1', ['tampered'])).toEqual([
        { n: 0 },
      ]);
    });
  });

  describe("the HTTP layer's own refusals (part 1): the envelope, X-Request-Id and Cache-Control too", () => {
    let port: number;
    let token: string;
    beforeAll(async () => {
      await t.app.listen(0, '127.0.0.1');
      port = (t.app.getHttpServer().address() as AddressInfo).port;
      token = (await actor('super_admin')).token;
    });

    it('a body cut short without a token gets its 401 before the body, and nothing after it', async () => {
      const text =
        'POST /v1/admin/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":';
      const answer = parseAnswer(await rawRequest(port, text));
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ success: false, error: { code: 'AUTH_TOKEN_MISSING' } });
    });

    it.each([
      [
        'headers over the limit',
        431,
        'headers',
        `GET /v1/admin/users HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      ],
      ['a malformed header', 400, 'request', 'GET /v1/admin/users HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'],
      ['a request line that is not HTTP', 400, 'request', 'GARBAGE\r\n\r\n'],
      [
        'a path segment over the limit',
        414,
        'path',
        `GET /v1/admin/users/${'1'.repeat(300)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      ],
      ['a path that is not percent-encoding', 400, 'path', 'GET /v1/admin/users/%E0%A4%A HTTP/1.1\r\nHost: x\r\n\r\n'],
      [
        'a body cut short by the client',
        400,
        'request',
        'POST /v1/admin/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer TOKEN\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
      ],
    ])('%s: %i naming the %s', async (_, status, field, text) => {
      const answer = parseAnswer(await rawRequest(port, text.replace('TOKEN', token)));
      expect(answer.status).toBe(status);
      expect(answer.headers['x-request-id']).toMatch(UUID);
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      // 414 and 431 have codes of their own (part 1's table); the rest name the part in details.fields.
      const error =
        status === 414
          ? { code: 'URI_TOO_LONG', details: { field } }
          : status === 431
            ? { code: 'HEADERS_TOO_LARGE', details: { field } }
            : { code: 'VALIDATION_FAILED', details: { fields: [{ field }] } };
      expect(answer.body).toMatchObject({
        success: false,
        error,
        meta: { request_id: answer.headers['x-request-id'] },
      });
    });
  });
});
