import {
  DEFERRED_CHUNK,
  storedChanges,
  storedChunks,
} from '../../src/access-model/access-event-deferrals.repository.js';
import type { AccessChange } from '../../src/access-model/access-changes.js';

/** A fan-out's changes as a watch makes them: by user, then device, then permission. */
function fanOut(users: number, codes: readonly string[]): AccessChange[] {
  const changes: AccessChange[] = [];
  for (let user = 1; user <= users; user += 1)
    for (const code of codes)
      changes.push({
        user_id: user,
        device_id: code === 'authorities.read' ? 7 : null,
        permission_code: code,
        decided_by: 'group_authority_permission',
        ...(user % 3 === 0 ? {} : { group_id: 40 + (user % 2) }),
        change: user % 5 === 0 ? 'gained' : 'lost',
      });
  return changes;
}

const key = (change: AccessChange): string => JSON.stringify(Object.entries(change).sort());

describe('deferred access events: the chunks a write stores', () => {
  it('hold every change once, none changed, each chunk at most 1 000 changes and all but the last full', () => {
    const changes = fanOut(2_345, ['authorities.read', 'authorities.revoke', 'audit.read']);
    const chunks = storedChunks(changes);
    const sizes = chunks.map((chunk) => storedChanges(chunk).length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(changes.length);
    expect(sizes.slice(0, -1).every((size) => size === DEFERRED_CHUNK)).toBe(true);
    expect(sizes.at(-1)).toBeLessThanOrEqual(DEFERRED_CHUNK);
    const read = chunks.flatMap((chunk) => storedChanges(chunk)).map(key);
    expect(new Set(read).size).toBe(changes.length);
    expect(read.sort()).toEqual(changes.map(key).sort());
  });

  it('store alike changes once with their users: 100 000 members losing two rights are a few kilobytes a chunk', () => {
    const chunks = storedChunks(fanOut(100_000, ['authorities.read', 'authorities.revoke']));
    expect(chunks).toHaveLength(200);
    const largest = Math.max(...chunks.map((chunk) => JSON.stringify(chunk).length));
    // 1 000 user ids and a few alike changes' fields; one object per change was some 100 000 bytes.
    expect(largest).toBeLessThan(12_000);
  });

  it('read a chunk stored before the grouped form (plain changes) as it is', () => {
    const plain = fanOut(3, ['audit.read']);
    expect(storedChanges(plain)).toEqual(plain);
  });

  it('store nothing for no change', () => {
    expect(storedChunks([])).toEqual([]);
  });
});
