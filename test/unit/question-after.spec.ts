import { QuestionAfter } from '../../src/platform/cache/question-after.js';

/** A question and its sending, each released by the test. */
function gated(): {
  question: QuestionAfter<string>;
  send: () => void;
  answer: (value: string) => void;
  asked: () => number;
} {
  const sends: (() => void)[] = [];
  const answers: ((value: string) => void)[] = [];
  let asked = 0;
  const question = new QuestionAfter<string>(
    () => {
      asked += 1;
      return new Promise((resolve) => answers.push(resolve));
    },
    (send) => sends.push(send),
  );
  return {
    question,
    send: () => sends.shift()?.(),
    answer: (value) => answers.shift()?.(value),
    asked: () => asked,
  };
}

describe('QuestionAfter: one question after a turn of calls, its answer shared', () => {
  it('asks once for every call made before it is sent, and gives them all the answer', async () => {
    const { question, send, answer, asked } = gated();
    const first = question.after();
    const second = question.after();
    expect(asked()).toBe(0);
    send();
    expect(asked()).toBe(1);
    answer('role:master');
    expect(await first).toBe('role:master');
    expect(await second).toBe('role:master');
  });

  it('asks again for a call made once the question was sent: its answer must come after that call', async () => {
    const { question, send, answer, asked } = gated();
    const early = question.after();
    send();
    const late = question.after();
    expect(late).not.toBe(early);
    answer('first');
    send();
    answer('second');
    expect(await early).toBe('first');
    expect(await late).toBe('second');
    expect(asked()).toBe(2);
  });

  it('fails every waiting call when the question fails, and asks anew next time', async () => {
    let calls = 0;
    const sends: (() => void)[] = [];
    const question = new QuestionAfter<string>(
      () => {
        calls += 1;
        if (calls === 1) throw new Error('connection closed');
        return Promise.resolve('ok');
      },
      (send) => sends.push(send),
    );
    const failing = [question.after(), question.after()];
    sends.shift()?.();
    for (const call of failing) await expect(call).rejects.toThrow('connection closed');
    const next = question.after();
    sends.shift()?.();
    expect(await next).toBe('ok');
  });
});
