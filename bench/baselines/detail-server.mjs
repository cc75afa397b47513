// Baseline for GET /v1/admin/{users|authorities}/{id} (cache hit): a bare node:http server doing the same
// work as the service: verify the same JWT (HS256, KeyObject, issuer, audience), read the
// session and the user's auth entry from the same Redis as the service does and check them,
// read the cached user, send the same envelope bytes and headers. No framework, no guard, no
// permission metadata, no logging.
import { createClient } from '@keyv/redis';
import jwt from 'jsonwebtoken';
import { createSecretKey, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { getEntries } from './redis-entries.mjs';

const key = createSecretKey(Buffer.from(process.env.JWT_SECRET, 'utf8'));
const redis = createClient({ url: process.env.REDIS_URL });
await redis.connect();

function decode(raw) {
  const match = /^(\d+)\|([01])\|/.exec(raw ?? '');
  return match === null
    ? undefined
    : { version: Number(match[1]), deleted: match[2] === '1', json: raw.slice(match[0].length) };
}

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
  const match = /^\/v1\/admin\/(users|authorities)\/(\d+)$/.exec(request.url ?? '');
  const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
  if (match === null || token === undefined) return send(response, 401, '{}');
  let claims;
  try {
    claims = jwt.verify(token, key, { algorithms: ['HS256'], issuer: 'admin-api', audience: 'admin-portal' });
  } catch {
    return send(response, 401, '{}');
  }
  const [sessionRaw, userRaw] = await getEntries(redis, [`auth:session:${claims.sid}`, `auth:user:${claims.sub}`]);
  const session = JSON.parse(decode(sessionRaw).json);
  const account = JSON.parse(decode(userRaw).json);
  if (
    session.revoked ||
    session.user_id !== Number(claims.sub) ||
    Date.parse(session.expires_at) <= Date.now() ||
    account.status_id !== 2
  )
    return send(response, 401, '{}');
  const type = match[1] === 'users' ? 'user' : 'authority';
  const [raw] = await getEntries(redis, [`res:${type}:${match[2]}`]);
  const entry = decode(raw);
  send(
    response,
    200,
    `{"success":true,"data":${entry.json},"meta":${JSON.stringify({ request_id: requestId, cache: 'hit' })}}`,
    { etag: `"${entry.version}"`, 'x-request-id': requestId },
  );
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => redis.close().then(() => process.exit(0))));
