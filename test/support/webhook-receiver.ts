import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** One request a receiver got. */
export interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

/** How a path answers: a status, after an optional delay (a function answers per request). */
export type Answer = { status: number; delayMs?: number; headers?: Record<string, string> };

/**
 * A real HTTP receiver on loopback, as an integration would run one: it records every request
 * and answers per path (200 unless told otherwise), so specs can check signatures, retries,
 * redirects and slow endpoints against actual deliveries.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  private readonly answers = new Map<string, (request: Received) => Answer>();
  private server: Server | undefined;
  private port = 0;

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const received = {
          path: request.url ?? '/',
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        this.received.push(received);
        const answer = this.answers.get(received.path)?.(received) ?? { status: 200 };
        void sleep(answer.delayMs ?? 0).then(() => {
          if (response.destroyed) return;
          response.writeHead(answer.status, answer.headers ?? {}).end('ok');
        });
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  answer(path: string, answer: Answer | ((request: Received) => Answer)): void {
    this.answers.set(path, typeof answer === 'function' ? answer : () => answer);
  }

  at(path: string): Received[] {
    return this.received.filter((request) => request.path === path);
  }

  /** Waits until `count` requests reached `path`. */
  async waitFor(path: string, count = 1, timeoutMs = 15_000): Promise<Received[]> {
    const until = Date.now() + timeoutMs;
    while (this.at(path).length < count) {
      if (Date.now() > until)
        throw new Error(`${path} got ${this.at(path).length} of ${count} requests in ${timeoutMs} ms`);
      await sleep(50);
    }
    return this.at(path);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
