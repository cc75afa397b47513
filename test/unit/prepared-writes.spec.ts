import { PREPARED_WRITES_PER_KIND, preparedWrite, textOf } from '../../src/platform/database/prepared.js';

describe('preparedWrite', () => {
  it('names a text once, the same name each time it is asked', () => {
    const first = preparedWrite('unit-same', 'UPDATE t SET a = $2 WHERE id = $1');
    expect(first).toEqual({
      name: expect.stringMatching(/^unit-same-[\w-]{27}$/),
      text: 'UPDATE t SET a = $2 WHERE id = $1',
    });
    expect(preparedWrite('unit-same', 'UPDATE t SET a = $2 WHERE id = $1')).toBe(first);
  });

  it(`keeps the first ${PREPARED_WRITES_PER_KIND} texts of a kind prepared, runs the others as text`, () => {
    const texts = Array.from(
      { length: PREPARED_WRITES_PER_KIND + 3 },
      (_, i) => `UPDATE t SET c${i} = $2 WHERE id = $1`,
    );
    const statements = texts.map((text) => preparedWrite('unit-capped', text));
    expect(statements.slice(0, PREPARED_WRITES_PER_KIND).every((s) => typeof s === 'object')).toBe(true);
    expect(statements.slice(PREPARED_WRITES_PER_KIND)).toEqual(texts.slice(PREPARED_WRITES_PER_KIND));
    // Asked again, a kept text stays prepared and a refused one stays text.
    expect(typeof preparedWrite('unit-capped', texts[0] ?? '')).toBe('object');
    expect(preparedWrite('unit-capped', texts.at(-1) ?? '')).toBe(texts.at(-1));
    expect(statements.map(textOf)).toEqual(texts);
  });

  it('caps each kind apart', () => {
    for (let i = 0; i < PREPARED_WRITES_PER_KIND; i += 1) preparedWrite('unit-full', `SELECT ${i}`);
    expect(typeof preparedWrite('unit-other', 'SELECT 1')).toBe('object');
  });
});
