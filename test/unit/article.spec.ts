import { pastParticiple, withArticle } from '../../src/platform/http/article.js';

describe('messages in English: articles and past participles', () => {
  it('"a" before a consonant sound, a u said "you" included; "an" before a vowel sound', () => {
    expect(
      ['user', 'unit', 'unique id', 'suspended user', 'active user', 'unknown', 'update', 'owner', 'expired'].map(
        withArticle,
      ),
    ).toEqual([
      'a user',
      'a unit',
      'a unique id',
      'a suspended user',
      'an active user',
      'an unknown',
      'an update',
      'an owner',
      'an expired',
    ]);
  });

  it('the past participle of an action: suspended, not "suspendd"', () => {
    expect(['suspend', 'activate', 'revoke', 'deactivate'].map(pastParticiple)).toEqual([
      'suspended',
      'activated',
      'revoked',
      'deactivated',
    ]);
  });
});
