import { createClient } from '@keyv/redis';
import { actor, createUser, tokenFor, type Caller } from '../support/auth.js';
import { startApp, type TestApp } from '../support/app.js';
import { createAuthority, createDevice } from '../support/devices.js';
import { caller } from '../support/requests.js';
import { OwnRedis } from '../support/redis-server.js';

type Mangle = (value: string) => string;

/** Rewrites every string value in the Redis (keeping its expiry) and answers how many it changed. */
async function corruptEverything(url: string, mangle: Mangle): Promise<number> {
  const client = createClient({ url });
  await client.connect();
  let changed = 0;
  try {
    for await (const keys of client.scanIterator({ COUNT: 1000 })) {
      for (const key of keys) {
        // Entries, not the generations they live under: a mangled generation is only another
        // generation (every read a miss), tested on its own below.
        if ((await client.type(key)) !== 'string' || /(^|:)(generation|gen:.*)$/.test(key)) continue;
        const value = (await client.get(key)) ?? '';
        await client.set(key, mangle(value), { KEEPTTL: true });
        changed += 1;
      }
    }
  } finally {
    await client.close();
  }
  return changed;
}

// Each entry is `<version>|<deleted>|<json>`: these keep a readable head and break the rest.
const MANGLES: readonly (readonly [string, Mangle])[] = [
  ['truncated to half', (value) => value.slice(0, Math.floor(value.length / 2))],
  [
    'valid JSON of the wrong shape, at a far higher version',
    (value) => (value.includes('|') ? '999999|0|{"x":1}' : value),
  ],
  [
    'another record’s JSON under the key',
    (value) => value.replace(/"id":(\d+)/, (_, id: string) => `"id":${Number(id) + 1}`),
  ],
  ['not an entry at all', (value) => (value.includes('|') ? 'garbage' : value)],
];

describe('a corrupted cache entry is a miss (part 7): replaced from the database, never sent', () => {
  let redis: OwnRedis;
  let t: TestApp;
  let root: Caller;
  let operator: Caller;
  let device: { id: number };
  let revokedToken: string;

  beforeAll(async () => {
    redis = await OwnRedis.start();
    // A budget a loaded machine cannot exceed: this spec is about corrupt entries, and a read that
    // bypassed a slow cache would never see the corruption it is meant to meet.
    t = await startApp({ redisUrl: redis.url, widgets: false, env: { CACHE_TIMEOUT_MS: '2000' } });
    root = await actor('super_admin');
    operator = await actor('operator');
    device = await createDevice();
    await createAuthority(device.id, operator.user.id, { permissions: ['devices.read', 'devices.update'] });
    const leaving = await createUser({ role: 'viewer' });
    revokedToken = await tokenFor(leaving);
    await caller(t, root).post(`/v1/admin/users/${leaving.id}/revoke-sessions`, {}).expect(200);
  });
  afterAll(async () => {
    await t.close();
    await redis.stop();
  });

  /** Every kind of cached read: a detail, a list, the auth context, a device authority set, counts. */
  async function readEverything(): Promise<Record<string, unknown>> {
    const detail = await caller(t, root).get(`/v1/admin/users/${operator.user.id}`).expect(200);
    const list = await caller(t, root).get('/v1/admin/users?page_size=5').expect(200);
    const onDevice = await caller(t, operator).get(`/v1/admin/devices/${device.id}`).expect(200);
    const counts = await caller(t, operator)
      .get(`/v1/admin/message-read-state/counts?user_id=${operator.user.id}`)
      .expect(200);
    const refused = await t.http().get('/v1/admin/users').set('Authorization', `Bearer ${revokedToken}`).expect(401);
    return {
      detail: { data: detail.body.data as unknown, etag: detail.headers.etag },
      list: (list.body.data as { id: number }[]).map((user) => user.id),
      device: { data: onDevice.body.data as unknown, etag: onDevice.headers.etag },
      counts: counts.body.data as unknown,
      refused: refused.body.error.code as unknown,
    };
  }

  it('a rate-limit counter that is not a number starts its window again instead of failing every request', async () => {
    const client = createClient({ url: redis.url });
    await client.connect();
    try {
      await caller(t, root).get('/v1/admin/roles').expect(200);
      await new Promise((resolve) => setTimeout(resolve, 300)); // the limiter's next flush creates the counter
      const counters: string[] = [];
      for await (const keys of client.scanIterator({ MATCH: '*count:*', COUNT: 1000 })) counters.push(...keys);
      expect(counters.length).toBeGreaterThan(0);
      for (const key of counters) await client.set(key, '', { KEEPTTL: true });
    } finally {
      await client.close();
    }
    const failures = (await t.http().get('/health/ready').expect(200)).body.data.cache_stats.failures as number;
    // The limiter adds its counts every 200 ms: let several of those run on the corrupted counters.
    for (let n = 0; n < 5; n += 1) {
      expect((await caller(t, root).get('/v1/admin/roles').expect(200)).body.meta.cache).toBe('hit');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect((await t.http().get('/health/ready').expect(200)).body.data.cache_stats.failures).toBe(failures);
  });

  it('a generation that is not a whole number starts again from the clock: every read a clean miss, none wrong', async () => {
    const expected = await readEverything();
    const client = createClient({ url: redis.url });
    await client.connect();
    try {
      const generations: string[] = [];
      for await (const keys of client.scanIterator({ MATCH: '*generation', COUNT: 1000 })) generations.push(...keys);
      expect(generations.length).toBeGreaterThan(0);
      for (const key of generations) await client.set(key, 'garbage');
      expect(await readEverything()).toEqual(expected);
      // Each shard's generation restarts when a call first touches the shard (the untouched stay garbage).
      const restarted = [];
      for (const key of generations) {
        const value = (await client.get(key)) ?? '';
        if (value === 'garbage') continue;
        restarted.push(value);
        expect(Number(value.split('@')[0])).toBeGreaterThan(Date.now() * 1000 - 60_000_000);
      }
      expect(restarted.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
    const again = await caller(t, root).get(`/v1/admin/users/${operator.user.id}`).expect(200);
    expect(again.body.meta.cache).toBe('hit');
  });

  it.each(MANGLES)(
    '%s: every read answers as before, from the database, and the entry is rebuilt',
    async (_, mangle) => {
      const expected = await readEverything();
      await readEverything(); // every projection is now in the cache
      expect(await corruptEverything(redis.url, mangle)).toBeGreaterThan(5);
      const unreadableBefore = (await t.http().get('/health/ready').expect(200)).body.data.cache_stats
        .unreadable as number;
      expect(await readEverything()).toEqual(expected);
      // A write on the device goes through the device-authority layer on the rebuilt set.
      await caller(t, operator).patch(`/v1/admin/devices/${device.id}`, { name: 'After corruption' }).expect(200);
      await caller(t, operator).patch(`/v1/admin/devices/${device.id}`, { name: 'Test device' }).expect(200);
      const stats = (await t.http().get('/health/ready').expect(200)).body.data.cache_stats as { unreadable: number };
      expect(stats.unreadable).toBeGreaterThan(unreadableBefore);
      // Replaced, not just bypassed: the detail is a hit again.
      const again = await caller(t, root).get(`/v1/admin/users/${operator.user.id}`).expect(200);
      expect(again.body.meta.cache).toBe('hit');
    },
  );
});
