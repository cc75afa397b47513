import 'reflect-metadata';
import { validateSync } from 'class-validator';
import { characters, Length, MaxLength, MinLength } from '../../src/platform/http/text-length.js';

class Sample {
  @Length(1, 3) name!: string;
  @MaxLength(3) note!: string;
  @MinLength(2) code!: string;
  @MaxLength(2, { each: true }) tags!: string[];
}

function problems(values: Partial<Sample>): Record<string, string[]> {
  const sample = Object.assign(new Sample(), { name: 'a', note: '', code: 'ab', tags: [], ...values });
  return Object.fromEntries(
    validateSync(sample).map((error) => [error.property, Object.values(error.constraints ?? {})]),
  );
}

describe('length rules count characters as PostgreSQL does (code points)', () => {
  it('counts code points: a variation selector is one, a surrogate pair is one, a lone surrogate is one', () => {
    expect(characters('')).toBe(0);
    expect(characters('a\uFE0F')).toBe(2);
    expect(characters('é')).toBe(1);
    expect(characters('e\u0301')).toBe(2);
    expect(characters('😀')).toBe(1);
    expect(characters('\uD83D')).toBe(1);
    expect(characters('\uDE00a')).toBe(2);
  });

  it('refuses what class-validator let through: three variation-selector pairs are six characters', () => {
    expect(problems({ name: 'a\uFE0Fb\uFE0Fc\uFE0F' })).toEqual({
      name: ['name must be shorter than or equal to 3 characters'],
    });
    expect(problems({ note: 'a\uFE0Fb\uFE0F' })).toEqual({
      note: ['note must be shorter than or equal to 3 characters'],
    });
  });

  it('accepts at the limit, counting an emoji once', () => {
    expect(problems({ name: '😀😀😀', note: '😀😀😀', code: '😀😀', tags: ['😀😀'] })).toEqual({});
  });

  it('names the bound that failed, and refuses what is not a string', () => {
    expect(problems({ name: '' })).toEqual({ name: ['name must be longer than or equal to 1 characters'] });
    expect(problems({ code: 'a' })).toEqual({ code: ['code must be longer than or equal to 2 characters'] });
    expect(problems({ name: 5 as unknown as string })).toEqual({
      name: ['name must be longer than or equal to 1 and shorter than or equal to 3 characters'],
    });
    expect(problems({ note: 5 as unknown as string })).toEqual({
      note: ['note must be shorter than or equal to 3 characters'],
    });
    expect(problems({ tags: ['ok', 'a\uFE0F!'] })).toEqual({
      tags: ['each value in tags must be shorter than or equal to 2 characters'],
    });
  });
});
