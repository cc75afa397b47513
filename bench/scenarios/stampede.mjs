// 5. Stampede: a hot key expires under 200 concurrent requests. Goal: one database load per
// instance (single-flight), and the refill's p99 at most 3x the steady state's.
import { createClient } from '@keyv/redis';
import { storedKeys } from '../../dist/src/platform/cache/cache-keys.js';
import { load, percentile, REDIS_URL } from '../support.mjs';

// The service's key prefix (CACHE_KEY_PREFIX's default).
const PREFIX = 'admin-api:';

async function loads(serviceUrl) {
  const body = await (await fetch(`${serviceUrl}/health/ready`)).json();
  return body.data.cache_stats.loads;
}

export async function stampede(ctx) {
  const url = `${ctx.serviceUrl}/v1/admin/authorities/${ctx.hotId}`;
  const headers = { authorization: `Bearer ${ctx.token}` };
  await fetch(url, { headers });
  const steady = await load(url, { headers, connections: 200, duration: 3 });
  const redis = createClient({ url: REDIS_URL });
  await redis.connect();
  try {
    const before = await loads(ctx.serviceUrl);
    // Expire the hot entry (the key as the store keeps it), then 200 requests at once.
    const deleted = await redis.del(storedKeys.entry(PREFIX, `res:authority:${ctx.hotId}`));
    if (deleted !== 1) throw new Error('the hot entry was not in Redis: the scenario would measure nothing');
    const latencies = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const started = performance.now();
        const response = await fetch(url, { headers });
        await response.arrayBuffer();
        return performance.now() - started;
      }),
    );
    const dbLoads = (await loads(ctx.serviceUrl)) - before;
    const refillP99 = Math.round(percentile(latencies, 99));
    return [
      {
        scenario: '5 stampede, 200 concurrent on an expired key',
        metric: 'DB loads',
        service: dbLoads,
        baseline: 1,
        ratio: '',
        goal: '1 per instance',
        met: dbLoads === 1,
        notes: '',
      },
      {
        scenario: '5 stampede p99: refill vs steady',
        metric: 'ms',
        service: refillP99,
        baseline: steady.p99_ms,
        ratio: Math.round((refillP99 / Math.max(1, steady.p99_ms)) * 100) / 100,
        goal: '<= 3x',
        met: refillP99 <= 3 * Math.max(1, steady.p99_ms),
        notes: 'steady: 200 connections, 3 s',
      },
    ];
  } finally {
    await redis.close();
  }
}
