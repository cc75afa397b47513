import { TurnReads } from '../../src/platform/cache/turn-reads.js';

/** Reads whose sending and answers are each released by the test; `sent` records the commands in order. */
function gated(): {
  reads: TurnReads<string>;
  send: () => void;
  sent: string[];
  values: ((values: (string | null)[]) => void)[];
  answers: ((value: string) => void)[];
  failures: ((error: Error) => void)[];
} {
  const sends: (() => void)[] = [];
  const sent: string[] = [];
  const values: ((values: (string | null)[]) => void)[] = [];
  const answers: ((value: string) => void)[] = [];
  const failures: ((error: Error) => void)[] = [];
  const reads = new TurnReads<string>(
    (keys) => {
      sent.push(`MGET ${keys.join(' ')}`);
      return new Promise((resolve, reject) => {
        values.push(resolve);
        failures.push(reject);
      });
    },
    () => {
      sent.push('INFO');
      return new Promise((resolve) => answers.push(resolve));
    },
    (send) => sends.push(send),
  );
  return { reads, send: () => sends.shift()?.(), sent, values, answers, failures };
}

describe('TurnReads: the reads of one turn in one MGET, the question about the server after them', () => {
  it('sends nothing until the turn ends, then one MGET of every key (each once) and the question after it', async () => {
    const { reads, send, sent, values, answers } = gated();
    const first = reads.read(['g1', 'session']);
    const second = reads.read(['g2', 'authority:1', 'g1', 'user:3']);
    expect(sent).toEqual([]);
    send();
    expect(sent).toEqual(['MGET g1 session g2 authority:1 user:3', 'INFO']);
    values[0]?.(['1@a', 's', '2@a', 'x', null]);
    answers[0]?.('role:master');
    expect(await first).toEqual({ values: ['1@a', 's'], answer: 'role:master' });
    expect(await second).toEqual({ values: ['2@a', 'x', '1@a', null], answer: 'role:master' });
  });

  it('sends a read made after the turn was sent with the next turn, with a question of its own', async () => {
    const { reads, send, sent, values, answers } = gated();
    const early = reads.read(['a']);
    send();
    const late = reads.read(['b']);
    values[0]?.(['A']);
    answers[0]?.('first');
    expect(await early).toEqual({ values: ['A'], answer: 'first' });
    send();
    values[1]?.(['B']);
    answers[1]?.('second');
    expect(await late).toEqual({ values: ['B'], answer: 'second' });
    expect(sent).toEqual(['MGET a', 'INFO', 'MGET b', 'INFO']);
  });

  it("splits a large turn into MGETs of at most 1024 keys, all before the question; a read's keys share one MGET", async () => {
    const { reads, send, sent, values, answers } = gated();
    const keys = Array.from({ length: 1400 }, (_, i) => `k${i}`);
    const first = reads.read(keys.slice(0, 700));
    // 700 + 400 would pass 1024: this read starts the next MGET, its generation and entry together.
    const second = reads.read(keys.slice(700, 1100));
    const again = reads.read(['k3', 'k1099', 'k1100']);
    const big = reads.read(keys);
    send();
    expect(sent.map((command) => command.split(' ').length - 1)).toEqual([700, 402, 1400, 0]);
    expect(sent[1]?.split(' ').slice(-3)).toEqual(['k1099', 'k3', 'k1100']);
    expect(sent.at(-1)).toBe('INFO');
    values[0]?.(keys.slice(0, 700));
    values[1]?.([...keys.slice(700, 1100), 'k3', 'k1100']);
    values[2]?.(keys);
    answers[0]?.('ok');
    expect((await first).values).toEqual(keys.slice(0, 700));
    expect((await second).values).toEqual(keys.slice(700, 1100));
    expect((await again).values).toEqual(['k3', 'k1099', 'k1100']);
    expect((await big).values).toEqual(keys);
  });

  it('a command refused at once fails the turn and leaves no rejection unhandled (the MGETs already sent)', async () => {
    const reads = new TurnReads<string>(
      () => Promise.reject(new Error('mget failed')),
      () => {
        throw new Error('The client is closed');
      },
      (send) => send(),
    );
    await expect(reads.read(['a'])).rejects.toThrow('The client is closed');
    await new Promise((resolve) => setImmediate(resolve));
  });

  it('a read of no keys gets no values and the answer; a turn of only those sends the question alone', async () => {
    const { reads, send, sent, answers } = gated();
    const empty = reads.read([]);
    send();
    expect(sent).toEqual(['INFO']);
    answers[0]?.('ok');
    expect(await empty).toEqual({ values: [], answer: 'ok' });
  });

  it('fails every read of the turn when its MGET fails, and reads anew next turn', async () => {
    const { reads, send, failures, values, answers } = gated();
    const failing = [reads.read(['a']), reads.read(['b'])];
    send();
    failures[0]?.(new Error('connection closed'));
    answers[0]?.('ok');
    for (const read of failing) await expect(read).rejects.toThrow('connection closed');
    const next = reads.read(['c']);
    send();
    values[1]?.(['C']);
    answers[1]?.('ok');
    expect(await next).toEqual({ values: ['C'], answer: 'ok' });
  });

  it('fails the turn when sending throws at once (the client refuses the command)', async () => {
    const reads = new TurnReads<string>(
      () => {
        throw new Error('The client is closed');
      },
      () => Promise.resolve('never'),
      (send) => send(),
    );
    await expect(reads.read(['a'])).rejects.toThrow('The client is closed');
  });
});
