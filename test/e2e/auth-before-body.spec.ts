import { connect, type Socket } from 'node:net';
import { actor, type Caller } from '../support/auth.js';
import { listening, startApp, type TestApp } from '../support/app.js';

const ANNOUNCED_BYTES = 6_800_000;

/**
 * Sends a POST whose headers announce a large body but only its first kilobyte, and keeps the
 * connection open. A server that reads the body before authenticating never answers (the rest
 * never comes, and the test times out); one that authenticates first answers at once.
 */
function postWithHeldBody(port: number, path: string, authorization: string) {
  const head = [
    `POST ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Authorization: ${authorization}`,
    'Content-Type: application/json',
    `Content-Length: ${ANNOUNCED_BYTES}`,
    '',
    `{"items":[${'1,'.repeat(500)}`,
  ].join('\r\n');
  return talk(port, head, (received, headerEnd) => {
    const length = Number(/content-length: (\d+)/i.exec(received.slice(0, headerEnd))?.[1] ?? NaN);
    const body = received.slice(headerEnd + 4);
    return Buffer.byteLength(body) < length ? undefined : { status: Number(received.slice(9, 12)), body };
  });
}

/**
 * Writes `text` on a connection of its own and answers what `answer` makes of what came back once
 * it says it has enough (headers received, then as it likes); the connection is then dropped.
 */
function talk<T>(
  port: number,
  text: string,
  answer: (received: string, headerEnd: number) => T | undefined,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
      const headerEnd = received.indexOf('\r\n\r\n');
      const result = headerEnd < 0 ? undefined : answer(received, headerEnd);
      if (result === undefined) return;
      socket.destroy();
      resolve(result);
    });
    socket.write(text);
  });
}

describe('authentication comes before the body (part 4)', () => {
  let t: TestApp;
  let port: number;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null });
    port = await listening(t);
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('a bulk route with a junk token and a 6.8 MB body still on its way is answered 401 at once', async () => {
    const answer = await postWithHeldBody(port, '/v1/admin/authority-permissions/bulk-grant', 'Bearer junk');
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toMatchObject({
      success: false,
      error: { code: 'AUTH_TOKEN_INVALID' },
    });
  });

  it('a request without a token is answered 401 AUTH_TOKEN_MISSING before its body', async () => {
    const answer = await postWithHeldBody(port, '/v1/admin/users', '');
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'AUTH_TOKEN_MISSING' } });
  });

  it('Expect: 100-continue is answered 401 without a 100 Continue; a valid token gets its 100 Continue', async () => {
    const refused = await exchange(port, expectContinue('Bearer junk'));
    expect(refused.startsWith('HTTP/1.1 401')).toBe(true);
    expect(refused).not.toContain('100 Continue');
    const allowed = await exchange(port, expectContinue(root.auth));
    expect(allowed.startsWith('HTTP/1.1 100 Continue')).toBe(true);
  });

  it('a revoked session is refused before the body too', async () => {
    const gone = await actor('admin');
    await t.http().post(`/v1/admin/users/${gone.user.id}/revoke-sessions`).set('Authorization', root.auth).expect(200);
    const answer = await postWithHeldBody(port, '/v1/admin/users', gone.auth);
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'AUTH_SESSION_INVALID' } });
  });
});

describe('the per-address limit comes before the body too (parts 4 and 10)', () => {
  let t: TestApp;
  let port: number;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null, env: { AUTH_FAILURE_LIMIT_PER_MINUTE: '3' } });
    port = await listening(t);
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('a blocked address is answered 429 before its body; a valid token from it still is not refused', async () => {
    for (let attempt = 0; attempt < 3; attempt += 1)
      await t.http().get('/v1/admin/users').set('Authorization', 'Bearer nonsense').expect(401);
    const blocked = await postWithHeldBody(port, '/v1/admin/inbox/bulk-delete', 'Bearer nonsense');
    expect(blocked.status).toBe(429);
    expect(JSON.parse(blocked.body)).toMatchObject({
      error: { code: 'RATE_LIMITED', details: { scope: 'ip' } },
    });
    // A valid token from the blocked address passes and is judged on its own: this body is over
    // the route's 1 MiB (refused by its announced length, still without reading it).
    const served = await postWithHeldBody(port, '/v1/admin/users', root.auth);
    expect(served.status).toBe(413);
    expect(JSON.parse(served.body)).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    await t.http().get('/v1/admin/users?page_size=1').set('Authorization', root.auth).expect(200);
  });
});

/** A POST that announces 6.8 MB and asks before sending it. */
function expectContinue(authorization: string): string {
  return [
    'POST /v1/admin/users HTTP/1.1',
    'Host: 127.0.0.1',
    `Authorization: ${authorization}`,
    'Content-Type: application/json',
    'Expect: 100-continue',
    `Content-Length: ${ANNOUNCED_BYTES}`,
    '',
    '',
  ].join('\r\n');
}

/** Writes `text` and answers the first status line and headers the server sends back. */
function exchange(port: number, text: string): Promise<string> {
  return talk(port, text, (received, headerEnd) => received.slice(0, headerEnd));
}
