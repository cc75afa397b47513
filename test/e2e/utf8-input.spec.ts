import { actor, type Caller } from '../support/auth.js';
import { listening, startApp, type TestApp } from '../support/app.js';
import { sql } from '../support/db.js';

/** A JSON text whose string escapes a lone surrogate: valid JSON, but not UTF-8 (part 1). */
const loneSurrogate = (field: string, rest: string) => `{"${field}":"abc\\ud800def",${rest}}`;

describe('strings that are not UTF-8 (part 1)', () => {
  let t: TestApp;
  let root: Caller;
  let port: number;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null });
    port = await listening(t);
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  const post = (path: string, body: string) =>
    t.http().post(path).set('Authorization', root.auth).set('Content-Type', 'application/json').send(body);

  it('a lone surrogate in a value is 400 VALIDATION_FAILED, rule utf8, naming the field, and nothing is stored', async () => {
    const email = `surrogate-${Date.now()}@example.com`;
    const refused = await post(
      '/v1/admin/users',
      loneSurrogate('display_name', `"email":"${email}","role_id":4`),
    ).expect(400);
    expect(refused.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { fields: [{ field: 'display_name', rule: 'utf8' }] },
    });
    expect(await sql('SELECT 1 FROM users WHERE email = $1', [email])).toEqual([]);
  });

  it('bytes that are not UTF-8 (a raw surrogate, a stray 0xFF) are 400 rule utf8, never stored as U+FFFD', async () => {
    for (const bad of [Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xff])]) {
      const email = `raw-bytes-${Date.now()}-${bad[0]}@example.com`;
      const body = Buffer.concat([
        Buffer.from(`{"email":"${email}","role_id":4,"display_name":"a`),
        bad,
        Buffer.from('"}'),
      ]);
      // The bytes exactly as they are (a client library would re-encode a string).
      const refused = await fetch(`http://127.0.0.1:${port}/v1/admin/users`, {
        method: 'POST',
        headers: { Authorization: root.auth, 'Content-Type': 'application/json' },
        body,
      });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: unknown }).error).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: { fields: [{ field: 'body', rule: 'utf8' }] },
      });
      expect(await sql('SELECT 1 FROM users WHERE email = $1', [email])).toEqual([]);
    }
  });

  it('one nested in an array or used as a key is refused the same way; a paired surrogate (an emoji) is fine', async () => {
    const nested = await post(
      '/v1/admin/inbox',
      `{"user_id":${root.user.id},"conversation_id":"c","type":"t","title":"x","body":"y","data":{"list":["ok","\\udc00"]}}`,
    ).expect(400);
    expect(nested.body.error.details.fields[0]).toMatchObject({ field: 'data.list.1', rule: 'utf8' });
    const key = await post(
      '/v1/admin/inbox',
      `{"user_id":${root.user.id},"conversation_id":"c","type":"t","title":"x","body":"y","data":{"\\ud800":1}}`,
    ).expect(400);
    expect(key.body.error.details.fields[0]).toMatchObject({ field: 'data', rule: 'utf8' });
    const emoji = await post(
      '/v1/admin/inbox',
      `{"user_id":${root.user.id},"conversation_id":"c","type":"t","title":"x \\ud83d\\ude00","body":"y"}`,
    ).expect(201);
    expect(emoji.body.data.title).toBe('x 😀');
  });
});
