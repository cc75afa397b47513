import { Agent as HttpAgent, request as httpRequest, type Agent, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

/** A delivery's answer must come within this time (part 6.12). */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** Of an answer's body at most this much is read, for at most this long, before the connection goes. */
const MAX_DRAINED_BYTES = 64 * 1024;
const DRAIN_MS = 1000;

/**
 * Connections kept open to one endpoint's checked addresses (deliveries to a busy endpoint reuse
 * them instead of a handshake each); a new agent when the addresses change.
 */
export function endpointAgent(url: URL, maxSockets: number): Agent {
  const options = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, timeout: DELIVERY_TIMEOUT_MS };
  return url.protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
}

/** One attempt's outcome: the HTTP status when there was one, and why it failed otherwise. */
export interface AttemptOutcome {
  readonly ok: boolean;
  readonly status: number | null;
  readonly error: string | null;
}

/**
 * POSTs one delivery to the given addresses of the URL's host, which the caller has checked at
 * delivery time (DNS can change after the endpoint was created): the connection goes to one of
 * those very addresses whatever a resolver would answer now, so a DNS answer that changes in
 * between cannot send it elsewhere (a kept connection was made to one of them too). Redirects
 * are not followed; proxies in the environment are not used. The status line decides: a 2xx within 10 s is delivered, anything else is a failure.
 */
export function postWebhook(
  url: URL,
  addresses: readonly string[],
  headers: Readonly<Record<string, string>>,
  body: string,
  agent: Agent | false = false,
): Promise<AttemptOutcome> {
  const pinned: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) }));
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<AttemptOutcome>((resolve) => {
    let settled = false;
    const settle = (outcome: AttemptOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: (
          _host: string,
          options: { all?: boolean },
          callback: (...args: [Error | null, string | LookupAddress[], number?]) => void,
        ) => {
          const [first] = pinned;
          if (options.all === true) callback(null, pinned);
          else callback(null, first?.address ?? '', first?.family ?? 4);
        },
        agent,
      },
      (response: IncomingMessage) => {
        settle(outcomeOf(response.statusCode ?? 0));
        // The body is not used: read a little of it so the connection can serve the next delivery,
        // or drop the connection rather than wait for what may never end.
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_DRAINED_BYTES) response.destroy();
        });
        response.on('error', () => undefined);
        setTimeout(() => response.destroy(), DRAIN_MS).unref();
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      settle({ ok: false, status: null, error: `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` });
    }, DELIVERY_TIMEOUT_MS);
    req.on('error', (error: NodeJS.ErrnoException) =>
      settle({ ok: false, status: null, error: `connection failed: ${error.code ?? error.message}` }),
    );
    req.end(body);
  });
}

function outcomeOf(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return { ok: true, status, error: null };
  if (status >= 300 && status < 400) return { ok: false, status, error: `redirect (${status}) not followed` };
  return { ok: false, status, error: `HTTP ${status}` };
}
