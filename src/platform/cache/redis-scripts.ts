import { createHash } from 'node:crypto';

/** A Lua script and its SHA1: called by SHA (EVALSHA), sent whole only when the server lacks it. */
export interface RedisScript {
  readonly lua: string;
  readonly sha: string;
}

function script(lua: string): RedisScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

// The Lua scripts of the Redis store. Each one touches the keys of one hash slot only (a shard, or
// the table generations), so they run unchanged on Redis Cluster (see storedKeys). Reads of a
// single server do not need them: they are plain MGETs checked in the service (stored-values.ts).
//
// A generation is stored as `<n>@<stamp>`: the number, and the stamp of the Redis server that
// wrote it, its run id followed by its replication id. A generation written under another stamp
// is not trusted: after a failover the promoted replica may lack the last writes its old master
// acknowledged (replication is asynchronous), an invalidation among them; a restarted server may
// have come back from an old snapshot; and a master demoted, resynced from the promoted replica
// and promoted back (same process, same run id) holds that replica's data, whose generations it
// wrote itself before it lost the invalidation. Every promotion starts a new replication id, and
// every start a new run id. Such a generation, a missing one (evicted) and a corrupted one all
// restart above anything they could have reached: the server clock in microseconds (or one more
// than the old value, if that is higher). Never from 0 or 1, whose entries may still exist.
//
// ARGV[1] of every generation script is the server's stamp as the caller learned it on this very
// connection (ServerIdentity), or '' on a cluster. A generation under another stamp than ARGV[1]
// is checked against the server's own (INFO): a master's replication id also changes when its
// first replica attaches, and an instance that learned the old one must neither restart what the
// others wrote under the new one nor have its own restarted by them, back and forth.
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
local given = ARGV[1]
local actual
local function server()
  if not actual then
    local info = redis.call('INFO', 'server', 'replication')
    -- A replica trusts nothing (its data may be behind its master's): no stored stamp has a '!'.
    if string.match(info, '\\nrole:(%a+)') ~= 'master' then actual = '!'
    else actual = (string.match(info, 'run_id:(%w+)') or '') .. (string.match(info, 'master_replid:(%w+)') or '') end
  end
  return actual
end
local function trusted(owner)
  return owner ~= nil and (owner == given or owner == server())
end
local function parse(raw)
  local digits, owner = string.match(raw or '', '^(%d+)@(%w+)$')
  local n = tonumber(digits)
  if not n or n >= 9007199254740991 then return nil, nil end
  -- Not as store() writes it (a leading zero): a corrupted value, restarted above its number.
  if string.format('%.0f', n) ~= digits then return n, nil end
  return n, owner
end
local function store(key, n, stamp)
  redis.call('SET', key, string.format('%.0f@%s', n, stamp))
  return string.format('%.0f', n)
end
local function generation(key)
  local n, owner = parse(value(key))
  if n and trusted(owner) then return string.format('%.0f', n) end
  return store(key, math.max(clock(), (n or 0) + 1), server())
end
local function bump(key)
  local n, owner = parse(value(key))
  if n and trusted(owner) then return store(key, n + 1, owner) end
  return store(key, math.max(clock(), (n or 0) + 1), server())
end
`;

// Entries: KEYS holds (shard generation, entry) pairs, both in the shard's slot. An entry is
// stored as `<generation>:<version>|<deleted>|<json>`: it counts only under its shard's current
// generation. On a cluster every call holds one shard's entries; on one server, any.
const ENTRIES = `${GENERATIONS}
local known = {}
local function generationOf(i)
  local key = KEYS[2 * i - 1]
  if not known[key] then known[key] = generation(key) end
  return known[key]
end
`;

/**
 * Each entry (ARGV: the server's stamp) as stored when it belongs to its shard's current generation or is
 * not an entry at all (the caller drops it), false under another generation.
 */
export const GET_MANY = script(`${ENTRIES}
local found = {}
for i = 1, #KEYS / 2 do
  local raw = value(KEYS[2 * i])
  local gen = generationOf(i)
  if raw and (string.sub(raw, 1, #gen + 1) == gen .. ':' or not string.match(raw, '^%d+:')) then
    found[i] = raw
  else
    found[i] = false
  end
end
return found`);

/**
 * Compare-and-set: an entry built from an older row version never replaces a newer one of the same
 * generation. ARGV = the server's stamp, ttl, then (version, entry) per pair of KEYS; answers 1 or 0 per entry.
 */
export const SET_MANY_IF_NOT_OLDER = script(`${ENTRIES}
local result = {}
for i = 1, #KEYS / 2 do
  local gen = generationOf(i)
  local current = value(KEYS[2 * i])
  local at, version = nil, nil
  if current then at, version = string.match(current, '^(%d+):(%d+)|[01]|') end
  if at == gen and tonumber(version) > tonumber(ARGV[1 + 2 * i]) then
    result[i] = 0
  else
    redis.call('SET', KEYS[2 * i], gen .. ':' .. ARGV[2 + 2 * i], 'PX', ARGV[2])
    result[i] = 1
  end
end
return result`);

/** Compare-and-delete: removes an entry a read could not use (ARGV[1], as stored), unless a write replaced it. */
export const DELETE_IF_SAME = script(`${VALUE}
if value(KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`);

/** The named generations (KEYS), each as a decimal string. ARGV = the server's stamp. */
export const READ_GENERATIONS = script(`${GENERATIONS}
local found = {}
for i = 1, #KEYS do found[i] = generation(KEYS[i]) end
return found`);

/** Adds one to each named generation (KEYS); answers the new values. ARGV = the server's stamp. */
export const BUMP_GENERATIONS = script(`${GENERATIONS}
local found = {}
for i = 1, #KEYS do found[i] = bump(KEYS[i]) end
return found`);

// Counters live outside the generations: dropping the cache must not reset a rate limit. A value
// that is not a count (a corrupted key) would fail INCRBY on every request, and those failures
// would open the circuit for the whole cache: it starts the window again instead.
export const INCREMENT = script(`${VALUE}
local current = value(KEYS[1])
if current and not tonumber(current) then redis.call('DEL', KEYS[1]) end
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`);

// A triggered rebuild's drop (KEYS: entries of one shard): each entry becomes a tombstone at its
// own generation and version (a miss for reads that still refuses an older fill, as every
// invalidation does); a value that is not an entry goes.
export const TOMBSTONE = script(`${VALUE}
local dropped = 0
for i = 1, #KEYS do
  local current = value(KEYS[i])
  if current then
    local head = string.match(current, '^%d+:%d+|[01]|')
    if head then
      redis.call('SET', KEYS[i], string.sub(head, 1, -4) .. '|0|', 'KEEPTTL')
    else
      redis.call('DEL', KEYS[i])
    end
    dropped = dropped + 1
  end
end
return dropped`);
