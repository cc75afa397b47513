import { connect } from 'node:net';
import { actor, type Caller } from '../support/auth.js';
import { listening, startApp, type TestApp } from '../support/app.js';

const NINE_MIB = 9 * 1024 * 1024;

/**
 * Sends a body of `size` bytes as a client like curl does (writing on while the answer comes) and
 * resolves with the answer once it has fully arrived. Rejects if the connection ends or is reset
 * before a whole answer was read: the client lost it.
 */
function postWholeBody(port: number, path: string, authorization: string, size: number) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let settled = false;
    const finish = (error?: Error): void => {
      if (settled) return;
      const headerEnd = received.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(received.slice(0, Math.max(headerEnd, 0)))?.[1] ?? NaN);
      const body = headerEnd < 0 ? '' : received.slice(headerEnd + 4);
      if (headerEnd >= 0 && Buffer.byteLength(body) >= length) {
        settled = true;
        socket.destroy();
        resolve({ status: Number(received.slice(9, 12)), body: body.slice(0, length) });
      } else if (error !== undefined) {
        settled = true;
        socket.destroy();
        reject(error);
      }
    };
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('utf8');
      finish();
    });
    // A write refused once the server has answered is no loss: what counts is the answer read.
    socket.on('error', (error) => finish(error));
    socket.on('close', () => finish(new Error('the connection closed before a whole answer arrived')));
    socket.write(
      [
        `POST ${path} HTTP/1.1`,
        'Host: 127.0.0.1',
        `Authorization: ${authorization}`,
        'Content-Type: application/json',
        `Content-Length: ${size}`,
        '',
        '',
      ].join('\r\n'),
    );
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    const more = (): void => {
      while (sent < size && !settled && !socket.destroyed) {
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
    port = await listening(t);
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
