import { createClient, type RedisClientType } from '@keyv/redis';
import type { Logger } from '@nestjs/common';
import { decodeEntry, encodeEntry, type CacheEntry, type CacheStore, type WindowCount } from './cache-store.js';

// The cache generation (KEYS[1]). A generation that is missing (evicted, lost with a restart) or
// not a whole number below 2^53 (corrupted) restarts from the server clock in microseconds, above
// any count it could have reached: never from 0 or 1, whose entries may still exist.
const CLOCK = `local function clock()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000000 + tonumber(now[2])
end
local function whole(raw)
  local n = tonumber(raw or '')
  if n and n >= 0 and n < 9007199254740992 and n == math.floor(n) then return n end
  return nil
end
local function generation(key)
  local raw = redis.call('GET', key)
  if whole(raw) then return raw end
  redis.call('SET', key, clock())
  return redis.call('GET', key)
end
`;

// Every key lives under the current generation; bumping the generation drops the whole cache at
// once, which is how an instance that lost invalidations during an outage makes itself safe.
export const GET = `${CLOCK}
local gen = generation(KEYS[1])
return redis.call('GET', ARGV[1] .. gen .. ':' .. ARGV[2])`;

export const GET_MANY = `${CLOCK}
local gen = generation(KEYS[1])
local found = {}
for i = 2, #ARGV do found[i - 1] = redis.call('GET', ARGV[1] .. gen .. ':' .. ARGV[i]) end
return found`;

// A list page and the generations of the tables it was read from, in one round trip: the page is
// under the cache generation, the table generations outside it (they only ever grow). A table
// generation that is missing or not a number comes back '' (the store bumps it, see below).
const GET_WITH_GENERATIONS = `${CLOCK}
local gen = generation(KEYS[1])
local found = { redis.call('GET', ARGV[1] .. gen .. ':' .. ARGV[2]) or '' }
for i = 3, #ARGV do
  local raw = redis.call('GET', ARGV[1] .. 'gen:' .. ARGV[i])
  found[i - 1] = whole(raw) and raw or ''
end
return found`;

// Counters live outside the generation: dropping the cache must not reset a rate limit. A value
// that is not a count (a corrupted key) would fail INCRBY on every request, and those failures
// would open the circuit for the whole cache: it starts the window again instead.
const INCREMENT = `
local current = redis.call('GET', KEYS[1])
if current and not tonumber(current) then redis.call('DEL', KEYS[1]) end
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`;

// Compare-and-set: an entry built from an older row version never replaces a newer one.
export const SET_IF_NOT_OLDER = `${CLOCK}
local gen = generation(KEYS[1])
local key = ARGV[1] .. gen .. ':' .. ARGV[2]
local current = redis.call('GET', key)
if current then
  local version = tonumber(string.match(current, '^(%d+)|[01]|'))
  if version and version > tonumber(ARGV[3]) then return 0 end
end
redis.call('SET', key, ARGV[4], 'PX', ARGV[5])
return 1`;

// The same compare-and-set for many keys: ARGV = prefix, ttl, then (key, version, value) triples.
const SET_MANY_IF_NOT_OLDER = `${CLOCK}
local gen = generation(KEYS[1])
for i = 3, #ARGV, 3 do
  local key = ARGV[1] .. gen .. ':' .. ARGV[i]
  local current = redis.call('GET', key)
  local version = current and tonumber(string.match(current, '^(%d+)|[01]|'))
  if not (version and version > tonumber(ARGV[i + 1])) then redis.call('SET', key, ARGV[i + 2], 'PX', ARGV[2]) end
end
return 1`;

// Adds one to a generation (the clock's value first when it is missing or corrupted, see CLOCK).
const BUMP = `${CLOCK}
local n = whole(redis.call('GET', KEYS[1])) or clock()
redis.call('SET', KEYS[1], n + 1)
return n + 1`;

// A triggered rebuild's drop: each entry becomes a tombstone at its own version (a miss for reads
// that still refuses an older fill, as every invalidation does); a value that is not an entry goes.
const TOMBSTONE = `
local dropped = 0
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  if current then
    local version = string.match(current, '^(%d+)|[01]|')
    if version then redis.call('SET', KEYS[i], version .. '|0|', 'KEEPTTL') else redis.call('DEL', KEYS[i]) end
    dropped = dropped + 1
  end
end
return dropped`;

const GENERATION = `${CLOCK}
return generation(KEYS[1])`;

// Compare-and-delete: removes an entry a read could not use, unless a write replaced it meanwhile.
const DELETE_IF_SAME = `${CLOCK}
local gen = generation(KEYS[1])
local key = ARGV[1] .. gen .. ':' .. ARGV[2]
if redis.call('GET', key) == ARGV[3] then return redis.call('DEL', key) end
return 0`;

/** Redis through the client of `@keyv/redis`, with Lua scripts for the versioned operations. */
export class RedisCacheStore implements CacheStore {
  readonly kind = 'redis' as const;
  private readonly client: RedisClientType;
  private readonly generationKey: string;
  private lastErrorLog = 0;

  constructor(
    url: string,
    private readonly prefix: string,
    logger: Logger,
  ) {
    this.generationKey = `${prefix}generation`;
    this.client = createClient({
      url,
      // Commands fail at once while disconnected instead of queueing without bound.
      disableOfflineQueue: true,
      socket: { connectTimeout: 1000, reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2000) },
    });
    this.client.on('error', (error: Error) => {
      // Reconnect attempts repeat the same error many times a second; one line every 10 s is enough.
      if (Date.now() - this.lastErrorLog > 10_000) {
        this.lastErrorLog = Date.now();
        logger.warn({ msg: 'redis connection error', err: error.message });
      }
    });
    this.client.connect().catch((error: unknown) => {
      logger.warn({
        msg: 'redis is not reachable yet; serving from the database',
        err: error instanceof Error ? error.message : String(error),
      });
    });
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    const raw = await this.client.eval(GET, { keys: [this.generationKey], arguments: [this.prefix, key] });
    return decodeEntry(typeof raw === 'string' ? raw : undefined);
  }

  async getMany(keys: readonly string[]): Promise<(CacheEntry | undefined)[]> {
    const raw = await this.client.eval(GET_MANY, { keys: [this.generationKey], arguments: [this.prefix, ...keys] });
    const values = Array.isArray(raw) ? raw : [];
    return keys.map((_, index) => {
      const value: unknown = values[index];
      return decodeEntry(typeof value === 'string' ? value : undefined);
    });
  }

  async increment(key: string, windowMs: number, by = 1): Promise<WindowCount> {
    const raw = await this.client.eval(INCREMENT, {
      keys: [`${this.prefix}count:${key}`],
      arguments: [String(windowMs), String(by)],
    });
    const [count, ttl] = Array.isArray(raw) ? raw : [];
    return { count: Number(count), resetInMs: Number(ttl) };
  }

  async deleteIfSame(key: string, entry: CacheEntry): Promise<boolean> {
    const deleted = await this.client.eval(DELETE_IF_SAME, {
      keys: [this.generationKey],
      arguments: [this.prefix, key, entry.raw ?? encodeEntry(entry)],
    });
    return deleted === 1;
  }

  async tombstoneByPrefix(keyPrefix: string): Promise<number> {
    const generation = (await this.client.eval(GENERATION, { keys: [this.generationKey] })) as string;
    let dropped = 0;
    for await (const keys of this.client.scanIterator({
      MATCH: `${this.prefix}${generation}:${keyPrefix}*`,
      COUNT: 1000,
    })) {
      if (keys.length > 0) dropped += Number(await this.client.eval(TOMBSTONE, { keys }));
    }
    return dropped;
  }

  async setIfNotOlder(key: string, entry: CacheEntry, ttlMs: number): Promise<boolean> {
    const stored = await this.client.eval(SET_IF_NOT_OLDER, {
      keys: [this.generationKey],
      arguments: [this.prefix, key, String(entry.version), encodeEntry(entry), String(ttlMs)],
    });
    return stored === 1;
  }

  async setManyIfNotOlder(entries: readonly (readonly [string, CacheEntry])[], ttlMs: number): Promise<void> {
    if (entries.length === 0) return;
    await this.client.eval(SET_MANY_IF_NOT_OLDER, {
      keys: [this.generationKey],
      arguments: [
        this.prefix,
        String(ttlMs),
        ...entries.flatMap(([key, entry]) => [key, String(entry.version), encodeEntry(entry)]),
      ],
    });
  }

  // Outside the cache generation, like the counters: a list page is keyed by the generations it
  // was built under, so these must only ever grow.
  async bumpGenerations(names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    await Promise.all(names.map((name) => this.client.eval(BUMP, { keys: [`${this.prefix}gen:${name}`] })));
  }

  async generations(names: readonly string[]): Promise<number[]> {
    if (names.length === 0) return [];
    const values = await this.client.mGet(names.map((name) => `${this.prefix}gen:${name}`));
    return values.map((value) => Number(value ?? 0) || 0);
  }

  async getWithGenerations(
    key: string,
    names: readonly string[],
  ): Promise<{ entry: CacheEntry | undefined; generations: number[] }> {
    const raw = await this.client.eval(GET_WITH_GENERATIONS, {
      keys: [this.generationKey],
      arguments: [this.prefix, key, ...names],
    });
    const [page, ...found] = Array.isArray(raw) ? (raw as unknown[]) : [];
    // A table generation that went missing starts again from the clock (a bump is always safe: it
    // only makes pages unusable); the page is then a miss, as no page carries the new value.
    const generations = await Promise.all(
      names.map(async (name, index) => {
        const value = found[index];
        if (typeof value === 'string' && value !== '') return Number(value);
        return Number(await this.client.eval(BUMP, { keys: [`${this.prefix}gen:${name}`] }));
      }),
    );
    const missing = found.length < names.length || found.some((value) => value === '');
    return { entry: !missing && typeof page === 'string' && page !== '' ? decodeEntry(page) : undefined, generations };
  }

  async flushAll(): Promise<void> {
    await this.client.eval(BUMP, { keys: [this.generationKey] });
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  /** A polite QUIT when Redis answers; with Redis gone, drop the socket instead of waiting for it. */
  async close(): Promise<void> {
    if (!this.client.isOpen) return;
    if (!this.client.isReady) {
      this.client.destroy();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), 500)));
    const outcome = await Promise.race([this.client.close().then(() => 'closed' as const), gaveUp]).catch(
      () => 'failed' as const,
    );
    clearTimeout(timer);
    if (outcome !== 'closed' && this.client.isOpen) this.client.destroy();
  }
}
