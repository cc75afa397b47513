// The Lua scripts of the Redis store. Each one touches the keys of one hash slot only (a shard, or
// the table generations), so they run unchanged on Redis Cluster (see storedKeys).
//
// A generation is stored as `<n>@<run id>`: the number, and the run id of the Redis server that
// wrote it. A generation written by another server is not trusted: after a failover the promoted
// replica may lack the last writes its old master acknowledged (replication is asynchronous), an
// invalidation among them, and a restarted server may have come back from an old snapshot. Such a
// generation, a missing one (evicted) and a corrupted one all restart above anything they could
// have reached: the server clock in microseconds (or one more than the old value, if that is
// higher). Never from 0 or 1, whose entries may still exist.
//
// Every key of the service holds a string. One that holds another type (a stray LPUSH on it) fails
// every command a script sends it, and each failure counts against the whole cache (the breaker,
// the flush after it, which fails on that key too): the cache would stay off for good. So scripts
// read through value(), which drops such a key and reads it as missing, exactly as an evicted one:
// an entry is then a miss and is refilled, a generation restarts above anything it reached, a
// counter starts its window again.
const VALUE = `
local function value(key)
  local found = redis.pcall('GET', key)
  if type(found) == 'table' and found.err then
    if string.sub(found.err, 1, 9) ~= 'WRONGTYPE' then return error(found) end
    redis.call('DEL', key)
    return false
  end
  return found
end
`;

const GENERATIONS = `${VALUE}
local function clock()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000000 + tonumber(now[2])
end
local function me()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
end
local function parse(raw)
  local n, owner = string.match(raw or '', '^(%d+)@(%w+)$')
  n = tonumber(n)
  if n and n < 9007199254740992 then return n, owner end
  return nil, nil
end
local function store(key, n, self)
  redis.call('SET', key, string.format('%.0f@%s', n, self))
  return string.format('%.0f', n)
end
local function generation(key, self)
  local n, owner = parse(value(key))
  if n and owner == self then return string.format('%.0f', n) end
  return store(key, math.max(clock(), (n or 0) + 1), self)
end
local function bump(key, self)
  local n, owner = parse(value(key))
  if n and owner == self then return store(key, n + 1, self) end
  return store(key, math.max(clock(), (n or 0) + 1), self)
end
`;

// Entries: KEYS[i] is the generation of entry i's shard, ARGV holds (shard head, key) pairs; the
// stored key is built here from the generation (it carries the shard's hash tag, so it is in
// KEYS[i]'s slot). On a cluster every call holds one shard's entries; on one server, any.
const ENTRIES = `${GENERATIONS}
local self = me()
local known = {}
local function stored(i, head, key)
  local gen = known[KEYS[i]]
  if not gen then
    gen = generation(KEYS[i], self)
    known[KEYS[i]] = gen
  end
  return head .. gen .. ':' .. key
end
`;

export const GET_MANY = `${ENTRIES}
local found = {}
for i = 1, #KEYS do found[i] = value(stored(i, ARGV[2 * i - 1], ARGV[2 * i])) end
return found`;

// Compare-and-set: an entry built from an older row version never replaces a newer one.
// ARGV = ttl, then (head, key, version, value) per entry; answers 1 or 0 per entry.
export const SET_MANY_IF_NOT_OLDER = `${ENTRIES}
local result = {}
for i = 1, #KEYS do
  local at = 2 + (i - 1) * 4
  local key = stored(i, ARGV[at], ARGV[at + 1])
  local current = value(key)
  local version = current and tonumber(string.match(current, '^(%d+)|[01]|'))
  if version and version > tonumber(ARGV[at + 2]) then
    result[i] = 0
  else
    redis.call('SET', key, ARGV[at + 3], 'PX', ARGV[1])
    result[i] = 1
  end
end
return result`;

// Compare-and-delete: removes an entry a read could not use, unless a write replaced it meanwhile.
// ARGV = head, key, the value the read found.
export const DELETE_IF_SAME = `${ENTRIES}
local key = stored(1, ARGV[1], ARGV[2])
if value(key) == ARGV[3] then return redis.call('DEL', key) end
return 0`;

/** The named generations (KEYS), each as a decimal string. */
export const READ_GENERATIONS = `${GENERATIONS}
local self = me()
local found = {}
for i = 1, #KEYS do found[i] = generation(KEYS[i], self) end
return found`;

/** Adds one to each named generation (KEYS); answers the new values. */
export const BUMP_GENERATIONS = `${GENERATIONS}
local self = me()
local found = {}
for i = 1, #KEYS do found[i] = bump(KEYS[i], self) end
return found`;

// Counters live outside the generations: dropping the cache must not reset a rate limit. A value
// that is not a count (a corrupted key) would fail INCRBY on every request, and those failures
// would open the circuit for the whole cache: it starts the window again instead.
export const INCREMENT = `${VALUE}
local current = value(KEYS[1])
if current and not tonumber(current) then redis.call('DEL', KEYS[1]) end
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`;

// A triggered rebuild's drop (KEYS: entries of one shard): each entry becomes a tombstone at its
// own version (a miss for reads that still refuses an older fill, as every invalidation does); a
// value that is not an entry goes.
export const TOMBSTONE = `${VALUE}
local dropped = 0
for i = 1, #KEYS do
  local current = value(KEYS[i])
  if current then
    local version = string.match(current, '^(%d+)|[01]|')
    if version then redis.call('SET', KEYS[i], version .. '|0|', 'KEEPTTL') else redis.call('DEL', KEYS[i]) end
    dropped = dropped + 1
  end
end
return dropped`;
