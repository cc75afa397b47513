import { connect, type AddressInfo } from 'node:net';
import { actor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';

const NINE_MIB = 9 * 1024 * 1024;

/**
 * Sends a whole body of `size` bytes and reads the answer to the end. Resolves with the status
 * and body, or rejects with the socket's error (a reset: the client lost the answer).
 */
function postWholeBody(port: number, path: string, authorization: string, size: number) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('end', () => {
      const headerEnd = received.indexOf('\r\n\r\n');
      resolve({ status: Number(received.slice(9, 12)), body: received.slice(headerEnd + 4) });
    });
    socket.write(
      [
        `POST ${path} HTTP/1.1`,
        'Host: 127.0.0.1',
        `Authorization: ${authorization}`,
        'Content-Type: application/json',
        'Connection: close',
        `Content-Length: ${size}`,
        '',
        '',
      ].join('\r\n'),
    );
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    const more = (): void => {
      while (sent < size) {
        const piece = chunk.subarray(0, Math.min(chunk.length, size - sent));
        sent += piece.length;
        if (!socket.write(piece)) {
          socket.once('drain', more);
          return;
        }
      }
    };
    more();
  });
}

describe('a body over the limit still gets its answer (part 10)', () => {
  let t: TestApp;
  let port: number;
  let root: Caller;
  beforeAll(async () => {
    t = await startApp({ widgets: false, redisUrl: null });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    root = await actor('super_admin');
  });
  afterAll(() => t.close());

  it('a 9 MiB body sent whole receives the 413 envelope every time, never a reset', async () => {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const answer = await postWholeBody(port, '/v1/admin/users', root.auth, NINE_MIB);
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body)).toMatchObject({
        success: false,
        error: { code: 'PAYLOAD_TOO_LARGE', details: { limit_bytes: 1_048_576 } },
      });
    }
  });

  it('on a bulk route the limit is the route’s own', async () => {
    const answer = await postWholeBody(port, '/v1/admin/inbox/bulk-delete', root.auth, NINE_MIB);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
  });
});
