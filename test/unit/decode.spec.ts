import { arrayOf, objectOf } from '../../src/platform/cache/decode.js';

describe('decoders of cached JSON (part 7: an unreadable entry is a miss)', () => {
  const session = objectOf<{ user_id: number; revoked: boolean; note: string | null }>({
    user_id: 'number',
    revoked: 'boolean',
    note: 'string|null',
  });

  it('answers the value when the shape holds', () => {
    expect(session('{"user_id":3,"revoked":false,"note":null,"extra":1}')).toEqual({
      user_id: 3,
      revoked: false,
      note: null,
      extra: 1,
    });
  });

  it.each([
    '',
    '{',
    'null',
    '[]',
    '"x"',
    '{"user_id":"3","revoked":false,"note":null}',
    '{"user_id":3,"note":null}',
    '{"user_id":3,"revoked":0,"note":null}',
  ])('answers undefined for %j', (json) => {
    expect(session(json)).toBeUndefined();
  });

  it('checks every element of an array', () => {
    const facts = arrayOf<{ id: number }>({ id: 'number' });
    expect(facts('[{"id":1},{"id":2}]')).toEqual([{ id: 1 }, { id: 2 }]);
    expect(facts('[]')).toEqual([]);
    expect(facts('[{"id":1},{"id":"2"}]')).toBeUndefined();
    expect(facts('{"id":1}')).toBeUndefined();
  });
});
