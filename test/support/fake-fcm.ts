import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FcmRequest {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: {
    message?: { token?: string; notification?: { title?: string; body?: string }; data?: Record<string, string> };
  };
}

/**
 * A stand-in for Google's token endpoint and FCM HTTP v1 on loopback. Tokens starting with
 * `unregistered` are answered 404 UNREGISTERED; `flaky` ones 503 the first time, then 200.
 */
export async function startFakeFcm(): Promise<{
  endpoint: string;
  credentials: string;
  publicKeyPem: string;
  sends: FcmRequest[];
  tokenRequests: string[];
  close: () => Promise<void>;
}> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const sends: FcmRequest[] = [];
  const tokenRequests: string[] = [];
  const flakySeen = new Set<string>();
  const read = (request: IncomingMessage): Promise<string> =>
    new Promise((resolve) => {
      let data = '';
      request.on('data', (chunk: Buffer) => (data += chunk.toString()));
      request.on('end', () => resolve(data));
    });
  const server: Server = createServer((request, response) => {
    void read(request).then((text) => {
      const reply = (status: number, body: object): void => {
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      if (request.url === '/token') {
        tokenRequests.push(text);
        reply(200, { access_token: 'fake-access-token', expires_in: 3600, token_type: 'Bearer' });
        return;
      }
      const body = JSON.parse(text || '{}') as FcmRequest['body'];
      sends.push({ path: request.url ?? '', authorization: request.headers.authorization, body });
      const token = body.message?.token ?? '';
      if (token.startsWith('unregistered')) {
        reply(404, {
          error: {
            code: 404,
            status: 'NOT_FOUND',
            message: 'Requested entity was not found.',
            details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }],
          },
        });
      } else if (token.startsWith('flaky') && !flakySeen.has(token)) {
        flakySeen.add(token);
        reply(503, { error: { code: 503, status: 'UNAVAILABLE', message: 'The service is currently unavailable.' } });
      } else {
        reply(200, { name: `projects/fake-project/messages/${sends.length}` });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const credentials = JSON.stringify({
    type: 'service_account',
    project_id: 'fake-project',
    client_email: 'push@fake-project.iam.gserviceaccount.com',
    private_key: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    token_uri: `${endpoint}/token`,
  });
  return {
    endpoint,
    credentials,
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    sends,
    tokenRequests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
