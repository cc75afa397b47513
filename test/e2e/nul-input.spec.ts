import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { actor, type Caller } from '../support/auth.js';
import { listening, startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';
import { caller } from '../support/requests.js';

/** Sends bytes as they are and reads until the server closes the connection (it does after a parser refusal). */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer));
    socket.write(text);
  });
}

/*
 * A NUL character (U+0000) cannot be stored in PostgreSQL text: before this round a body with one
 * answered "field: body, rule: range" after the database refused it (and logged an unhandled error
 * with a stack), and a NUL in a webhook URL was silently dropped. Part 1 now: 400 VALIDATION_FAILED,
 * rule `nul`, the field named, for every body field, query parameter and header; nothing reaches
 * the database, nothing is dropped.
 */
describe('NUL characters in any input (part 1, issue 42 item 3)', () => {
  let t: TestApp;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false });
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const refusal = (field: string) => ({
    code: 'VALIDATION_FAILED',
    details: { fields: [expect.objectContaining({ field, rule: 'nul' })] },
  });

  it('in a body field, nested, or a key: 400 naming it, nothing written', async () => {
    const serial = `S-${randomUUID()}`;
    const device = await caller(t, root)
      .post('/v1/admin/devices', { serial_number: `${serial}\u0000x`, name: 'Nul' })
      .expect(400);
    expect(device.body.error).toMatchObject(refusal('serial_number'));
    expect(await sql('SELECT id FROM devices WHERE serial_number LIKE $1', [`${serial}%`])).toEqual([]);
    const webhook = await caller(t, root)
      .post('/v1/admin/webhook-endpoints', { url: 'https://hooks.example.com/\u0000in', event_types: ['user.create'] })
      .expect(400);
    expect(webhook.body.error).toMatchObject(refusal('url'));
    const nested = await caller(t, root)
      .post('/v1/admin/groups/1/members', { members: [{ user_id: 1 }], reason: 'a\u0000b' })
      .expect(400);
    expect(nested.body.error).toMatchObject(refusal('reason'));
    const key = await caller(t, root)
      .post('/v1/admin/devices', JSON.parse('{"na\\u0000me": "x"}') as object)
      .expect(400);
    expect(key.body.error).toMatchObject(refusal('body'));
  });

  it('in a query parameter or a path segment (%00): 400 naming it', async () => {
    const query = await caller(t, root).get('/v1/admin/users?q=a%00b').expect(400);
    expect(query.body.error).toMatchObject(refusal('q'));
    const path = await caller(t, root).get('/v1/admin/users/1%00').expect(400);
    expect(path.body.error).toMatchObject(refusal('id'));
  });

  it('in a header: 400 naming it, in the envelope, though Node’s parser refuses it before any hook', async () => {
    const port = await listening(t);
    const answer = await raw(
      port,
      `GET /v1/admin/users HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\u0000b\r\nAuthorization: ${root.auth}\r\n\r\n`,
    );
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect((JSON.parse(body) as { error: unknown }).error).toMatchObject(refusal('x-request-id'));
  });

  it('in a SCIM body: 400 invalidValue in SCIM’s error schema', async () => {
    const response = await t
      .http()
      .post('/scim/v2/Users')
      .set('Authorization', root.auth)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ userName: 'a\u0000b@x.co' }));
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text)).toMatchObject({ status: '400', scimType: 'invalidValue' });
  });
});
