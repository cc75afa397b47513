// What bench:scim and bench:scim-cost share: the service on a throw-away database with an
// identity provider's token, and requests to /scim/v2 over `node:http` with kept connections (the
// identity provider runs elsewhere: `fetch`'s own work on these two cores added some 8 ms to the
// lookups' p99).
import { Agent, request } from 'node:http';
import {
  benchAdminSession,
  createBenchDatabase,
  flushBenchRedis,
  sessionToken,
  startService,
  withClient,
} from './support.mjs';

/**
 * A throw-away database and the service on it; `stops` gets what undoes each (last first). Answers
 * the service's child process and the SCIM base URL with the headers of a super_admin's token.
 */
export async function startScimService(email, stops) {
  const database = await createBenchDatabase();
  stops.push(() => database.drop());
  await flushBenchRedis();
  const session = await withClient(database.url, (client) => benchAdminSession(client, email));
  const token = sessionToken(database.url, session);
  const { child, origin } = await startService(database.url, stops);
  return {
    child,
    database,
    base: `${origin}/scim/v2`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
  };
}

/**
 * `call(method, path, body, expected)`: the parsed answer, or a rejection naming the status when
 * it is not `expected`; `pool(count, work)` runs `work(i)` for i in [0, count) on `concurrency`
 * workers.
 */
export function scimClient({ base, headers }, concurrency) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const call = (method, path, body, expected) =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const sent = payload === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(payload) };
      const req = request(`${base}${path}`, { method, agent, headers: sent }, (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode !== expected)
            reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`));
          else resolve(text === '' ? undefined : JSON.parse(text));
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
  const pool = async (count, work) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < count; i = next++) await work(i);
      }),
    );
  };
  return { call, pool };
}
