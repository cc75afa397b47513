import { UNREADABLE_ENTRY } from '../../src/platform/cache/cache-store.js';
import { ServerIdentity } from '../../src/platform/cache/server-identity.js';
import { entryUnder, masterStamp, trustedGeneration } from '../../src/platform/cache/stored-values.js';

describe('stored values: what a plain read of one Redis server may trust', () => {
  it('trusts a generation only as written by the server read now', () => {
    expect(trustedGeneration('1700000000000001@abc123', 'abc123')).toBe('1700000000000001');
    expect(trustedGeneration('0@abc123', 'abc123')).toBe('0');
    expect(trustedGeneration('9007199254740990@abc123', 'abc123')).toBe('9007199254740990');
    // Another server wrote it (a failover, a restart from a snapshot): a script restarts it.
    expect(trustedGeneration('1700000000000001@abc123', 'def456')).toBeUndefined();
    for (const raw of [
      null,
      undefined,
      '',
      '12',
      '12@',
      '@abc123',
      'x@abc123',
      '12@abc123 ',
      '99999999999999999@abc123',
      // Not canonical (the scripts read it as 5 and store entries under `5:`), nor at 2^53 - 1.
      '05@abc123',
      '0001700000000001@abc123',
      '9007199254740991@abc123',
    ])
      expect(trustedGeneration(raw, 'abc123')).toBeUndefined();
    // No identity known (a cluster's scripts ask themselves): nothing is trusted here.
    expect(trustedGeneration('12@abc123', '')).toBeUndefined();
  });

  it('reads an entry only under its shard’s current generation', () => {
    // Each keeps the value as stored, generation included: a compare-and-delete must match it.
    expect(entryUnder('7:3|0|{"id":1}', '7')).toEqual({
      version: 3,
      deleted: false,
      json: '{"id":1}',
      raw: '7:3|0|{"id":1}',
    });
    expect(entryUnder('7:3|1|{"id":1}', '7')).toEqual({
      version: 3,
      deleted: true,
      json: '{"id":1}',
      raw: '7:3|1|{"id":1}',
    });
    expect(entryUnder('7:3|0|', '7')).toEqual({ version: 3, deleted: false, json: '', raw: '7:3|0|' });
    // Built under another generation (before a flush, or by a server that is gone): a miss.
    expect(entryUnder('6:3|0|{"id":1}', '7')).toBeUndefined();
    expect(entryUnder(null, '7')).toBeUndefined();
    expect(entryUnder(undefined, '7')).toBeUndefined();
  });

  it('calls a value that is no entry unreadable and keeps it as stored, for the compare-and-delete', () => {
    for (const raw of ['garbage', '3|0|{"id":1}', ':3|0|{}', '7:garbage', '7:3|2|{}']) {
      const entry = entryUnder(raw, '7');
      expect(entry).toEqual({ ...UNREADABLE_ENTRY, raw });
    }
  });
});

/** A question about the server the test answers when it chooses (with a stamp that is its own run id). */
function gatedQuestions(): {
  ask: () => Promise<{ runId: string; stamp: string }>;
  answer: (stamp: string) => void;
  asked: () => number;
} {
  const pending: ((stamp: string) => void)[] = [];
  let asked = 0;
  return {
    ask: () => {
      asked += 1;
      return new Promise((resolve) => pending.push((stamp) => resolve({ runId: stamp, stamp })));
    },
    answer: (stamp) => pending.shift()?.(stamp),
    asked: () => asked,
  };
}

describe('masterStamp: what generations are trusted under, from INFO replication', () => {
  const replid = 'b'.repeat(40);
  it('is the run id and the replication id of a master', () => {
    const info = `# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:${replid}\r\nmaster_replid2:${'0'.repeat(40)}\r\n`;
    expect(masterStamp('a1', info)).toBe(`a1${replid}`);
  });

  it('is empty on a replica, without a replication id or a run id: nothing read there is trusted', () => {
    const replica = `# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_replid:${replid}\r\n`;
    expect(masterStamp('a1', replica)).toBe('');
    expect(masterStamp('a1', '# Replication\r\nrole:master\r\n')).toBe('');
    expect(masterStamp('', `role:master\r\nmaster_replid:${replid}\r\n`)).toBe('');
    // `role:master` inside another field's value is not the role.
    expect(masterStamp('a1', `role:slave\r\nnote:role:master\r\nmaster_replid:${replid}\r\n`)).toBe('');
  });
});

describe('ServerIdentity: the server behind a connection, asked once per connection', () => {
  it('asks once, answers every caller, then knows it without asking', async () => {
    const questions = gatedQuestions();
    const server = new ServerIdentity(questions.ask);
    const first = server.current();
    const second = server.current();
    questions.answer('abc123');
    expect(await first).toEqual({ runId: 'abc123', stamp: 'abc123', connection: 0 });
    expect(await second).toEqual({ runId: 'abc123', stamp: 'abc123', connection: 0 });
    expect(server.current()).toEqual({ runId: 'abc123', stamp: 'abc123', connection: 0 });
    expect(questions.asked()).toBe(1);
  });

  it('forgets it on a connection event and asks the new connection', async () => {
    const questions = gatedQuestions();
    const server = new ServerIdentity(questions.ask);
    const before = server.current();
    questions.answer('old');
    const old = await before;
    server.changed();
    expect(server.still(old)).toBe(false);
    const after = server.current();
    questions.answer('new');
    const current = await after;
    expect(current.stamp).toBe('new');
    expect(server.still(current)).toBe(true);
    expect(questions.asked()).toBe(2);
  });

  it('refuses an answer that arrives after the connection changed: it may be about the old server', async () => {
    const questions = gatedQuestions();
    const server = new ServerIdentity(questions.ask);
    const asking = server.current();
    server.changed();
    questions.answer('old');
    await expect(asking).rejects.toThrow('changed');
    const again = server.current();
    questions.answer('new');
    expect((await again).stamp).toBe('new');
  });

  it('asks again on the same connection when a generation was not under its stamp (a first replica attached)', async () => {
    const questions = gatedQuestions();
    const server = new ServerIdentity(questions.ask);
    const asking = server.current();
    questions.answer('run1repl1');
    const learned = await asking;
    // A recheck of an identity that is no longer the known one (asked again already) changes nothing.
    server.recheck({ runId: 'other', stamp: 'other', connection: 0 });
    expect(server.current()).toBe(learned);
    server.recheck(learned);
    const again = server.current();
    questions.answer('run1repl2');
    const current = await again;
    expect(current).toEqual({ runId: 'run1repl2', stamp: 'run1repl2', connection: 0 });
    // Not a reconnect: calls made under the first stamp still count.
    expect(server.still(learned)).toBe(true);
    expect(questions.asked()).toBe(2);
  });

  it('asks again after a failed question, and never takes an empty stamp', async () => {
    let calls = 0;
    const server = new ServerIdentity(() => {
      calls += 1;
      return calls === 1
        ? Promise.reject(new Error('offline'))
        : Promise.resolve(calls === 2 ? { runId: '', stamp: '' } : { runId: 'abc', stamp: 'abcdef' });
    });
    await expect(server.current()).rejects.toThrow('offline');
    await expect(server.current()).rejects.toThrow();
    expect((await server.current()).stamp).toBe('abcdef');
  });
});
