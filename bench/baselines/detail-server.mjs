// The physical baseline of the cached detail read (issue 30; fixed, not the service's design):
// a bare node:http server that verifies the same JWT on every request with node:crypto alone
// (HS256, issuer, audience, expiry, session id: ./hs256.mjs; issue 39), reads the session
// and the entity with two plain Redis GETs (sent together, one round trip), checks the session
// and sends the same envelope bytes and headers. No framework, no scripts, no generations, no
// user entry, no logging. The scenario stores the two values under `bare:` keys with plain SETs.
import { createClient } from '@keyv/redis';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { hs256Verifier } from './hs256.mjs';

const verify = hs256Verifier(process.env.JWT_SECRET, { issuer: 'admin-api', audience: 'admin-portal' });
const redis = createClient({ url: process.env.REDIS_URL });
await redis.connect();

function send(response, status, body, extra = {}) {
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    ...extra,
  });
  response.end(body);
}

const server = createServer(async (request, response) => {
  const requestId = randomUUID();
  if (request.url === '/health/ready') return send(response, 200, '{}');
  const match = /^\/v1\/admin\/authorities\/(\d+)$/.exec(request.url ?? '');
  const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
  if (match === null || token === undefined) return send(response, 401, '{}');
  let claims;
  try {
    claims = verify(token);
  } catch {
    claims = undefined;
  }
  if (claims === undefined) return send(response, 401, '{}');
  const [sessionRaw, entityRaw] = await Promise.all([
    redis.get(`bare:session:${claims.sid}`),
    redis.get(`bare:authority:${match[1]}`),
  ]);
  if (sessionRaw === null || entityRaw === null) return send(response, 404, '{}');
  const session = JSON.parse(sessionRaw);
  if (session.revoked || session.user_id !== Number(claims.sub) || Date.parse(session.expires_at) <= Date.now())
    return send(response, 401, '{}');
  const bar = entityRaw.indexOf('|');
  send(
    response,
    200,
    `{"success":true,"data":${entityRaw.slice(bar + 1)},"meta":${JSON.stringify({ request_id: requestId, cache: 'hit' })}}`,
    { etag: `"${entityRaw.slice(0, bar)}"`, 'x-request-id': requestId },
  );
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => redis.close().then(() => process.exit(0))));
