import { decodeEntry, UNREADABLE_ENTRY, type CacheEntry } from './cache-store.js';
import { Recent } from './recent.js';

/** Generations are numbers below 2^53 (the server clock in µs, then counted up): exact as JS numbers. */
// Canonical decimals only (no leading zero), as the scripts write them: `05` would be trusted
// here as `05` while the scripts read it as 5 and store entries under `5:`, all misses.
const GENERATION = /^(0|[1-9]\d{0,15})@(\w+)$/;
const ENTRY_GENERATION = /^(\d+):/;

/**
 * A generation as stored (`<n>@<stamp>`), when the server it is read from wrote it (`stamp`):
 * its number as a decimal string. Undefined for a missing, corrupted or foreign one, which only a
 * script may restart (READ_GENERATIONS): a read never trusts it.
 */
export function trustedGeneration(raw: string | null | undefined, stamp: string): string | undefined {
  if (typeof raw !== 'string' || stamp === '') return undefined;
  const parsed = parseGeneration(raw);
  return parsed?.owner === stamp ? parsed.generation : undefined;
}

/**
 * The stamp generations are trusted under, from the server's `INFO replication`: its run id and
 * replication id while it is a master; '' on a replica (its data is another server's, possibly
 * behind what that server acknowledged).
 */
export function masterStamp(runId: string, replication: string): string {
  if (runId === '' || !/^role:master\r?$/m.test(replication)) return '';
  const replicationId = /^master_replid:(\w+)/m.exec(replication)?.[1];
  return replicationId === undefined ? '' : `${runId}${replicationId}`;
}

/** Generations as stored are few (one per shard and table) and change only on bumps: parsed once each. */
const parsed = new Recent<string, { readonly generation: string; readonly owner: string } | null>(4096);

function parseGeneration(raw: string): { readonly generation: string; readonly owner: string } | null {
  const known = parsed.get(raw);
  if (known !== undefined) return known;
  const match = GENERATION.exec(raw);
  const result =
    match === null || Number(match[1]) >= Number.MAX_SAFE_INTEGER
      ? null
      : { generation: match[1] ?? '', owner: match[2] ?? '' };
  parsed.set(raw, result);
  return result;
}

/**
 * An entry as stored (`<generation>:<entry>`), read under its shard's current `generation`:
 * undefined when missing or built under another generation (a miss), the entry when it belongs
 * to this one, and an unreadable entry (carrying the stored value, so a compare-and-delete can
 * match it) when the value is not an entry at all.
 */
export function entryUnder(raw: string | null | undefined, generation: string | undefined): CacheEntry | undefined {
  if (typeof raw !== 'string') return undefined;
  const match = ENTRY_GENERATION.exec(raw);
  // No generation at all: not something the store wrote, whatever it looks like.
  if (match === null) return { ...UNREADABLE_ENTRY, raw };
  if (generation !== undefined && match[1] !== generation) return undefined;
  const entry = decodeEntry(raw.slice(match[0].length));
  // Always the value as stored (with its generation): a compare-and-delete of an entry whose JSON
  // does not decode must match it, and `encodeEntry` would leave the generation out.
  return entry === undefined ? undefined : { ...entry, raw };
}
