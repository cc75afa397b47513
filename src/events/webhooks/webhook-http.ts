import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { ApiError } from '../../common/api-error.js';
import { checkedAddresses, hostOf, type UrlPolicy } from './webhook-urls.js';

/** A delivery's answer must come within this time (part 6.12). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Of a receiver's answer only this much is read (the body is not used, only drained). */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** One attempt's outcome: the HTTP status when there was one, and why it failed otherwise. */
export interface AttemptOutcome {
  readonly ok: boolean;
  readonly status: number | null;
  readonly error: string | null;
}

/**
 * POSTs one delivery. The host is resolved and checked here, at delivery time (DNS can change
 * after the endpoint was created), and the connection goes to the very address that was checked,
 * so a DNS answer that changes in between cannot redirect it. Redirects are not followed; any
 * answer but a 2xx within 10 s is a failure.
 */
export async function postWebhook(
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: string,
  policy: UrlPolicy,
): Promise<AttemptOutcome> {
  if (url.protocol === 'http:' && !policy.allowHttp)
    return { ok: false, status: null, error: 'refused: http is not allowed (WEBHOOK_ALLOW_HTTP)' };
  let address: string;
  try {
    [address = ''] = await checkedAddresses(hostOf(url), policy);
  } catch (error) {
    if (error instanceof ApiError) return { ok: false, status: null, error: `refused: ${error.message}` };
    throw error;
  }
  const family = isIP(address);
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
        // The checked address, whatever the resolver would answer now.
        lookup: (
          _host: string,
          options: { all?: boolean },
          callback: (...args: [Error | null, string | LookupAddress[], number?]) => void,
        ) => {
          if (options.all === true) callback(null, [{ address, family }]);
          else callback(null, address, family);
        },
        agent: false,
      },
      (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) response.destroy();
        });
        const done = (): void => settle(outcomeOf(status));
        response.on('end', done);
        response.on('close', done);
        response.on('error', done);
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
