import { ApiError } from '../../src/platform/http/api-error.js';
import { assertIfMatch, parseIfMatch } from '../../src/platform/http/etag.js';

describe('If-Match', () => {
  it.each([
    [undefined, undefined],
    ['*', '*'],
    ['"3"', [3]],
    ['W/"3", "4"', [3, 4]],
    ['3', []],
    ['"abc"', []],
  ])('parses %j', (header, expected) => {
    expect(parseIfMatch(header)).toEqual(expected);
  });

  it('passes a matching version and refuses another with the current ETag', () => {
    expect(() => assertIfMatch([3], 3)).not.toThrow();
    expect(() => assertIfMatch(undefined, 9)).not.toThrow();
    let thrown: unknown;
    try {
      assertIfMatch([2], 3);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect((thrown as ApiError).status).toBe(412);
    expect((thrown as ApiError).details).toEqual({ current_etag: '"3"' });
  });
});
